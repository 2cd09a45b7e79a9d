// The CUDA build of the benchmark hub's GEMM (CLBlast's Xgemm kernel), as the hub's tuning script gemm_milo.py makes it
// for Kernel Tuner: cl_to_cuda.h (OpenCL keywords and types for CUDA), then the kernel's files in order, found on the
// include path the script gives (-I test/fixtures/benchmark-hub/kernels/gemm_milo; gemm_milo.yaml's includePaths). The
// script concatenates the files into one string; here they are included, unmodified.
#include "cl_to_cuda.h"
#include "common.opencl"
#include "xgemm_part1.opencl"
#include "xgemm_part2.opencl"
#include "xgemm_part3.opencl"
#include "xgemm_part4.opencl"
