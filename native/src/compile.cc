// NVRTC compiles on the libuv thread pool. The request is copied into plain C++ values on the JS thread before the
// worker is queued (no JS value is touched off-thread), and the result or the error is turned into JS on the JS
// thread. NVRTC is thread-safe across programs, so several compiles run at once.
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "api.h"
#include "args.h"
#include "errors.h"

namespace kt {
namespace {

struct CompileRequest {
  std::string source;
  std::string fileName;
  std::vector<std::string> nameExpressions;
  std::vector<std::string> options;
  /** In-memory headers: an #include of headerNames[i] reads headerSources[i] (before any include path). */
  std::vector<std::string> headerNames;
  std::vector<std::string> headerSources;
  bool wantPtx = false;
};

struct CompileOutput {
  std::vector<char> cubin;
  std::string ptx;
  std::string log;
  std::vector<std::pair<std::string, std::string>> loweredNames;
};

/** Owns an nvrtcProgram: destroyed on every path out of the worker. */
class Program {
 public:
  explicit Program(const NvrtcApi& api) : api_(api) {}
  ~Program() {
    if (program_ != nullptr) api_.nvrtcDestroyProgram(&program_);
  }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  nvrtcProgram* out() { return &program_; }
  nvrtcProgram get() const { return program_; }

 private:
  const NvrtcApi& api_;
  nvrtcProgram program_ = nullptr;
};

/** The error lines of a compile log, so that a message starts with what went wrong. */
std::string firstErrorLines(const std::string& log, size_t maxLines) {
  std::vector<std::string> errors;
  std::vector<std::string> nonEmpty;
  size_t start = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    std::string line = log.substr(start, end - start);
    start = end + 1;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty()) continue;
    nonEmpty.push_back(line);
    if (line.find("error") != std::string::npos) errors.push_back(line);
  }
  const std::vector<std::string>& chosen = errors.empty() ? nonEmpty : errors;
  std::string out;
  for (size_t i = 0; i < chosen.size() && i < maxLines; ++i) out += (i == 0 ? "" : "\n") + chosen[i];
  if (chosen.size() > maxLines) {
    out += "\n... " + std::to_string(chosen.size() - maxLines) + " more line(s) in the full compiler log";
  }
  return out;
}

class CompileWorker : public Napi::AsyncWorker {
 public:
  CompileWorker(Napi::Env env, const NvrtcApi& api, CompileRequest request, Napi::Promise::Deferred deferred)
      : Napi::AsyncWorker(env, "kernel_tuner_compile"),
        api_(api),
        request_(std::move(request)),
        deferred_(std::move(deferred)) {}

 protected:
  void Execute() override {
    try {
      if (!run()) SetError(error_.message);
    } catch (const std::exception& e) {
      error_ = ErrorInfo{};
      error_.code = "NVRTC_ERROR_OUT_OF_MEMORY";
      error_.explanation = std::string("The compile failed on the host: ") + e.what() + ".";
      error_.message = "compile failed: " + error_.explanation;
      SetError(error_.message);
    }
  }

  void OnOK() override {
    Napi::Env env = Env();
    Napi::Object result = Napi::Object::New(env);
    result.Set("cubin", Napi::Buffer<char>::Copy(env, output_.cubin.data(), output_.cubin.size()));
    if (request_.wantPtx) result.Set("ptx", Napi::String::New(env, output_.ptx));
    result.Set("log", Napi::String::New(env, output_.log));
    Napi::Object lowered = Napi::Object::New(env);
    for (const auto& entry : output_.loweredNames) lowered.Set(entry.first, Napi::String::New(env, entry.second));
    result.Set("loweredNames", lowered);
    deferred_.Resolve(result);
  }

  void OnError(const Napi::Error&) override { deferred_.Reject(toJsError(Env(), error_).Value()); }

 private:
  /** Fills output_ or error_; false on failure. */
  bool run() {
    Program program(api_);
    std::vector<const char*> headerSources;
    std::vector<const char*> headerNames;
    for (size_t i = 0; i < request_.headerNames.size(); ++i) {
      headerNames.push_back(request_.headerNames[i].c_str());
      headerSources.push_back(request_.headerSources[i].c_str());
    }
    nvrtcResult r = api_.nvrtcCreateProgram(program.out(), request_.source.c_str(), request_.fileName.c_str(),
                                            static_cast<int>(headerNames.size()), headerSources.data(),
                                            headerNames.data());
    if (r != NVRTC_SUCCESS) return fail(r, "nvrtcCreateProgram");
    for (const std::string& expr : request_.nameExpressions) {
      r = api_.nvrtcAddNameExpression(program.get(), expr.c_str());
      if (r != NVRTC_SUCCESS) return fail(r, "nvrtcAddNameExpression");
    }
    std::vector<const char*> options;
    options.reserve(request_.options.size());
    for (const std::string& o : request_.options) options.push_back(o.c_str());
    const nvrtcResult compiled =
        api_.nvrtcCompileProgram(program.get(), static_cast<int>(options.size()), options.data());

    // The log is wanted in both outcomes: warnings on success, errors on failure.
    size_t logSize = 0;
    r = api_.nvrtcGetProgramLogSize(program.get(), &logSize);
    if (r != NVRTC_SUCCESS) return fail(r, "nvrtcGetProgramLogSize");
    std::string log(logSize, '\0');
    if (logSize > 0) {
      r = api_.nvrtcGetProgramLog(program.get(), &log[0]);
      if (r != NVRTC_SUCCESS) return fail(r, "nvrtcGetProgramLog");
    }
    while (!log.empty() && log.back() == '\0') log.pop_back();
    output_.log = log;

    if (compiled != NVRTC_SUCCESS) {
      error_ = nvrtcErrorInfo(api_, compiled, "nvrtcCompileProgram");
      error_.log = log;
      error_.hasLog = true;
      const std::string first = firstErrorLines(log, 5);
      if (!first.empty()) error_.message = first + "\n(" + request_.fileName + ": " + error_.code + ")";
      return false;
    }

    for (const std::string& expr : request_.nameExpressions) {
      const char* lowered = nullptr;
      r = api_.nvrtcGetLoweredName(program.get(), expr.c_str(), &lowered);
      if (r != NVRTC_SUCCESS) {
        fail(r, "nvrtcGetLoweredName");
        error_.message = "nvrtcGetLoweredName failed for \"" + expr + "\": " + error_.code + ". " + error_.explanation;
        return false;
      }
      if (lowered == nullptr) {
        error_ = ErrorInfo{};
        error_.code = "NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID";
        error_.call = "nvrtcGetLoweredName";
        error_.explanation = "NVRTC returned no lowered name for this name expression.";
        error_.message = "nvrtcGetLoweredName returned nothing for \"" + expr + "\"";
        return false;
      }
      output_.loweredNames.emplace_back(expr, lowered);  // copied: the string belongs to the program
    }

    size_t cubinSize = 0;
    r = api_.nvrtcGetCUBINSize(program.get(), &cubinSize);
    if (r != NVRTC_SUCCESS) return fail(r, "nvrtcGetCUBINSize");
    if (cubinSize == 0) {
      // NVRTC makes a cubin only for a real architecture; with compute_XY (or no --gpu-architecture) it makes PTX only.
      error_ = ErrorInfo{};
      error_.code = "NVRTC_ERROR_INVALID_OPTION";
      error_.call = "nvrtcGetCUBINSize";
      error_.log = log;
      error_.hasLog = true;
      error_.explanation =
          "NVRTC produced no cubin because the target is a virtual architecture: pass the real one, "
          "--gpu-architecture=sm_XY (XY = the device's compute capability), not compute_XY.";
      error_.message = "compile produced no cubin for " + request_.fileName + ". " + error_.explanation;
      return false;
    }
    output_.cubin.resize(cubinSize);
    r = api_.nvrtcGetCUBIN(program.get(), output_.cubin.data());
    if (r != NVRTC_SUCCESS) return fail(r, "nvrtcGetCUBIN");

    if (request_.wantPtx) {
      size_t ptxSize = 0;
      r = api_.nvrtcGetPTXSize(program.get(), &ptxSize);
      if (r != NVRTC_SUCCESS) return fail(r, "nvrtcGetPTXSize");
      std::string ptx(ptxSize, '\0');
      if (ptxSize > 0) {
        r = api_.nvrtcGetPTX(program.get(), &ptx[0]);
        if (r != NVRTC_SUCCESS) return fail(r, "nvrtcGetPTX");
      }
      while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
      output_.ptx = std::move(ptx);
    }
    return true;
  }

  bool fail(nvrtcResult r, const char* call) {
    error_ = nvrtcErrorInfo(api_, r, call);
    if (!output_.log.empty()) {
      error_.log = output_.log;
      error_.hasLog = true;
    }
    return false;
  }

  const NvrtcApi& api_;
  CompileRequest request_;
  Napi::Promise::Deferred deferred_;
  CompileOutput output_;
  ErrorInfo error_;
};

/** NVRTC takes C strings: an embedded NUL would silently cut a source, option or name short. */
void checkNoNul(Napi::Env env, const std::string& value, const std::string& name) {
  if (value.find('\0') != std::string::npos) {
    throwInvalidArgument(env, "compile: " + name + " contains a NUL character");
  }
}

CompileRequest readRequest(Napi::Env env, const Napi::Value& value) {
  const Napi::Object obj = toObject(value, "compile", "request");
  CompileRequest req;
  req.source = toString(obj.Get("source"), "compile", "request.source");
  req.fileName = toString(obj.Get("fileName"), "compile", "request.fileName");
  req.nameExpressions = toStringArray(obj.Get("nameExpressions"), "compile", "request.nameExpressions");
  req.options = toStringArray(obj.Get("options"), "compile", "request.options");
  req.wantPtx = toBool(obj.Get("wantPtx"), "compile", "request.wantPtx");
  const Napi::Value headers = obj.Get("headers");
  if (!headers.IsUndefined()) {
    const Napi::Object h = toObject(headers, "compile", "request.headers");
    req.headerNames = toStringArray(h.Get("names"), "compile", "request.headers.names");
    req.headerSources = toStringArray(h.Get("sources"), "compile", "request.headers.sources");
    if (req.headerNames.size() != req.headerSources.size()) {
      throwInvalidArgument(env, "compile: request.headers.names and request.headers.sources differ in length");
    }
    for (size_t i = 0; i < req.headerNames.size(); ++i) {
      const std::string at = "[" + std::to_string(i) + "]";
      checkNoNul(env, req.headerNames[i], "request.headers.names" + at);
      checkNoNul(env, req.headerSources[i], "request.headers.sources" + at);
      if (req.headerNames[i].empty()) throwInvalidArgument(env, "compile: request.headers.names" + at + " is empty");
    }
  }
  checkNoNul(env, req.source, "request.source");
  checkNoNul(env, req.fileName, "request.fileName");
  for (size_t i = 0; i < req.nameExpressions.size(); ++i) {
    checkNoNul(env, req.nameExpressions[i], "request.nameExpressions[" + std::to_string(i) + "]");
    if (req.nameExpressions[i].empty()) {
      throwInvalidArgument(env, "compile: request.nameExpressions[" + std::to_string(i) + "] is empty");
    }
  }
  for (size_t i = 0; i < req.options.size(); ++i) {
    checkNoNul(env, req.options[i], "request.options[" + std::to_string(i) + "]");
  }
  return req;
}

}  // namespace

Napi::Value Compile(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Promise::Deferred deferred = Napi::Promise::Deferred::New(env);
  Napi::Promise promise = deferred.Promise();
  // Every failure, argument errors included, is a rejection: a function that returns a promise never throws.
  try {
    CompileRequest request = readRequest(env, info[0]);
    const NvrtcApi& api = requireNvrtc(env);  // loaded here, on the JS thread, before any worker runs
    auto* worker = new CompileWorker(env, api, std::move(request), deferred);
    worker->Queue();  // the worker deletes itself after OnOK/OnError
  } catch (const Napi::Error& e) {
    deferred.Reject(e.Value());
  } catch (const std::exception& e) {
    deferred.Reject(Napi::Error::New(env, std::string("compile: ") + e.what()).Value());
  }
  return promise;
}

}  // namespace kt
