// Modules (cubins) and their kernels. cuModuleLoadData takes no size, so the image is checked here first: the driver
// trusts the ELF headers and would read past the end of a truncated buffer.
#include <climits>
#include <cstring>
#include <vector>

#include "api.h"
#include "args.h"
#include "context.h"
#include "errors.h"

namespace kt {
namespace {

template <typename T>
T readLE(const uint8_t* p) {
  T v{};
  std::memcpy(&v, p, sizeof v);  // x86-64 and aarch64 are little-endian, as cubins are
  return v;
}

bool fits(uint64_t offset, uint64_t length, uint64_t size) { return offset <= size && length <= size - offset; }

/** Checks that a 64-bit little-endian ELF file's header tables and sections lie within `size` bytes. */
std::string checkElf(const uint8_t* p, size_t size) {
  if (size < 64) return "it is shorter than an ELF header";
  if (p[4] != 2 || p[5] != 1) return "it is not a 64-bit little-endian ELF file";
  const uint64_t phoff = readLE<uint64_t>(p + 32);
  const uint64_t shoff = readLE<uint64_t>(p + 40);
  const uint16_t phentsize = readLE<uint16_t>(p + 54);
  const uint16_t phnum = readLE<uint16_t>(p + 56);
  const uint16_t shentsize = readLE<uint16_t>(p + 58);
  const uint16_t shnum = readLE<uint16_t>(p + 60);
  if (phnum > 0 && !fits(phoff, uint64_t{phentsize} * phnum, size)) return "its program headers lie past its end";
  if (shnum > 0) {
    if (shentsize < 64 || !fits(shoff, uint64_t{shentsize} * shnum, size)) return "its section headers lie past its end";
    for (uint16_t i = 0; i < shnum; ++i) {
      const uint8_t* sh = p + shoff + uint64_t{shentsize} * i;
      const uint32_t type = readLE<uint32_t>(sh + 4);
      const uint64_t offset = readLE<uint64_t>(sh + 24);
      const uint64_t length = readLE<uint64_t>(sh + 32);
      constexpr uint32_t kNoBits = 8;  // SHT_NOBITS occupies no file space
      if (type != kNoBits && !fits(offset, length, size)) return "a section lies past its end (truncated file?)";
    }
  }
  return "";
}

bool looksLikePtx(const uint8_t* p, size_t size) {
  const std::string head(reinterpret_cast<const char*>(p), size < 65536 ? size : 65536);
  return head.find('\0') == std::string::npos && head.find(".version") != std::string::npos &&
         head.find(".target") != std::string::npos;
}

CUmodule toModule(const Napi::Value& v, const char* fn) {
  return reinterpret_cast<CUmodule>(static_cast<uintptr_t>(toUint64BigInt(v, fn, "module")));
}

CUfunction toFunction(const Napi::Value& v, const char* fn) {
  return reinterpret_cast<CUfunction>(static_cast<uintptr_t>(toUint64BigInt(v, fn, "fn")));
}

Napi::BigInt handle(Napi::Env env, const void* h) {
  return Napi::BigInt::New(env, static_cast<uint64_t>(reinterpret_cast<uintptr_t>(h)));
}

}  // namespace

Napi::Value ModuleLoad(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    throwExpected(info[0], "moduleLoad", "cubin", "a Buffer");
  }
  const Napi::Uint8Array bytes = info[0].As<Napi::Uint8Array>();
  const uint8_t* data = bytes.Data();
  const size_t size = bytes.ByteLength();

  // A private, 8-byte aligned copy: Buffer slices may be unaligned, and PTX must end with a NUL.
  std::vector<uint64_t> image((size + 1 + sizeof(uint64_t) - 1) / sizeof(uint64_t), 0);
  if (size >= 4 && std::memcmp(data, "\x7f" "ELF", 4) == 0) {
    const std::string problem = checkElf(data, size);
    if (!problem.empty()) throwInvalidArgument(env, "moduleLoad: the cubin is not loadable: " + problem);
  } else if (!looksLikePtx(data, size)) {
    throwInvalidArgument(env, "moduleLoad: expected cubin to hold an ELF cubin (or PTX text), received " +
                                  std::to_string(size) + " bytes of something else");
  }
  if (size > 0) std::memcpy(image.data(), data, size);

  const CudaApi& api = requireCuda(env);
  Context& ctx = Context::instance();
  std::lock_guard<std::mutex> lock(ctx.mutex);
  ctx.require(env, api, "moduleLoad");
  CUmodule module = nullptr;
  checkCuda(env, api, api.cuModuleLoadData(&module, image.data()), "cuModuleLoadData");
  ctx.addModule(module);
  return handle(env, module);
}

Napi::Value ModuleUnload(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CUmodule module = toModule(info[0], "moduleUnload");
  const CudaApi& api = requireCuda(env);
  Context& ctx = Context::instance();
  std::lock_guard<std::mutex> lock(ctx.mutex);
  ctx.require(env, api, "moduleUnload");
  ctx.requireModule(env, "moduleUnload", module);
  ctx.removeModule(module);  // forgotten even if the driver fails: it must not be unloaded twice
  checkCuda(env, api, api.cuModuleUnload(module), "cuModuleUnload");
  return env.Undefined();
}

Napi::Value ModuleGetFunction(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CUmodule module = toModule(info[0], "moduleGetFunction");
  const std::string name = toString(info[1], "moduleGetFunction", "loweredName");
  if (name.empty() || name.find('\0') != std::string::npos) {
    throwExpected(info[1], "moduleGetFunction", "loweredName", "a non-empty kernel name without NUL characters");
  }
  const CudaApi& api = requireCuda(env);
  Context& ctx = Context::instance();
  std::lock_guard<std::mutex> lock(ctx.mutex);
  ctx.require(env, api, "moduleGetFunction");
  ctx.requireModule(env, "moduleGetFunction", module);
  CUfunction fn = nullptr;
  const CUresult r = api.cuModuleGetFunction(&fn, module, name.c_str());
  if (r != CUDA_SUCCESS) {
    ErrorInfo e = cudaErrorInfo(api, r, "cuModuleGetFunction");
    e.message = "cuModuleGetFunction(\"" + name + "\") failed: " + e.code + ". " + e.explanation;
    throwError(env, e);
  }
  ctx.addFunction(fn, module);
  return handle(env, fn);
}

Napi::Value FunctionAttributes(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CUfunction fn = toFunction(info[0], "functionAttributes");
  const CudaApi& api = requireCuda(env);
  Context& ctx = Context::instance();
  std::lock_guard<std::mutex> lock(ctx.mutex);
  ctx.require(env, api, "functionAttributes");
  ctx.function(env, "functionAttributes", "fn", fn);
  auto attr = [&](CUfunction_attribute a) {
    int value = 0;
    checkCuda(env, api, api.cuFuncGetAttribute(&value, a, fn), "cuFuncGetAttribute");
    return Napi::Number::New(env, value);
  };
  Napi::Object out = Napi::Object::New(env);
  out.Set("numRegs", attr(CU_FUNC_ATTRIBUTE_NUM_REGS));
  out.Set("sharedSizeBytes", attr(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES));
  out.Set("constSizeBytes", attr(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES));
  out.Set("localSizeBytes", attr(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES));
  out.Set("maxThreadsPerBlock", attr(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK));
  out.Set("maxDynamicSharedSizeBytes", attr(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES));
  out.Set("ptxVersion", attr(CU_FUNC_ATTRIBUTE_PTX_VERSION));
  out.Set("binaryVersion", attr(CU_FUNC_ATTRIBUTE_BINARY_VERSION));
  return out;
}

Napi::Value FunctionOccupancy(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const char* fnName = "functionOccupancy";
  CUfunction fn = toFunction(info[0], fnName);
  const int blockSize = static_cast<int>(toInteger(info[1], fnName, "blockSize", 1, INT_MAX));
  const size_t dynamicSharedBytes = static_cast<size_t>(toInteger(info[2], fnName, "dynamicSharedBytes", 0, INT_MAX));
  const CudaApi& api = requireCuda(env);
  Context& ctx = Context::instance();
  std::lock_guard<std::mutex> lock(ctx.mutex);
  ctx.require(env, api, fnName);
  ctx.function(env, fnName, "fn", fn);
  int blocks = 0;
  checkCuda(env, api, api.cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fn, blockSize, dynamicSharedBytes),
            "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  return Napi::Number::New(env, blocks);
}

Napi::Value FunctionSetMaxDynamicShared(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CUfunction fn = toFunction(info[0], "functionSetMaxDynamicShared");
  const int bytes = static_cast<int>(toInteger(info[1], "functionSetMaxDynamicShared", "bytes", 0, INT_MAX));
  const CudaApi& api = requireCuda(env);
  Context& ctx = Context::instance();
  std::lock_guard<std::mutex> lock(ctx.mutex);
  ctx.require(env, api, "functionSetMaxDynamicShared");
  ctx.function(env, "functionSetMaxDynamicShared", "fn", fn);
  checkCuda(env, api, api.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes),
            "cuFuncSetAttribute");
  return env.Undefined();
}

}  // namespace kt
