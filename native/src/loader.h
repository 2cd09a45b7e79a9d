// Run-time loading of libcuda, NVRTC and NVML: dlopen once (thread-safe, cached for the life of the process), resolve every
// symbol the addon uses, and remember why it failed so that status() and errors can say so.
#pragma once

#include <string>
#include <vector>

#include "cuda_api.h"
#include "nvml_api.h"

namespace kt {

struct LibraryStatus {
  bool loaded = false;
  std::string path;   // the file that was opened (also set when it opened but lacked a symbol)
  std::string error;  // dlopen/dlsym messages when not loaded
};

/** The file names tried, in order. */
const std::vector<std::string>& cudaCandidates();
const std::vector<std::string>& nvrtcCandidates();
const std::vector<std::string>& nvmlCandidates();

/** nullptr when libcuda is unusable; the first call loads it. Never throws. */
const CudaApi* cudaApi();
const LibraryStatus& cudaStatus();

/** nullptr when NVRTC is unusable; the first call loads it. Never throws. */
const NvrtcApi* nvrtcApi();
const LibraryStatus& nvrtcStatus();

/** nullptr when NVML is unusable (no driver, or one older than its energy counter); the first call loads it. */
const NvmlApi* nvmlApi();
const LibraryStatus& nvmlStatus();

}  // namespace kt
