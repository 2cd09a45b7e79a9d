#include "args.h"

#include <cmath>
#include <cstdio>

#include "errors.h"

namespace kt {

std::string describe(const Napi::Value& value) {
  if (value.IsUndefined()) return "undefined";
  if (value.IsNull()) return "null";
  if (value.IsBoolean()) return value.As<Napi::Boolean>().Value() ? "true" : "false";
  if (value.IsNumber()) return value.ToString().Utf8Value();  // JS formatting: -1, 1.5, NaN, Infinity
  if (value.IsBigInt()) return value.ToString().Utf8Value() + "n";
  if (value.IsString()) {
    std::string s = value.As<Napi::String>().Utf8Value();
    if (s.size() > 40) s = s.substr(0, 37) + "...";
    return "\"" + s + "\"";
  }
  if (value.IsSymbol()) return "a symbol";
  if (value.IsFunction()) return "a function";
  if (value.IsArray()) return "an array";
  if (value.IsBuffer()) return "a Buffer";
  if (value.IsTypedArray()) return "a typed array";
  if (value.IsArrayBuffer()) return "an ArrayBuffer";
  if (value.IsDataView()) return "a DataView";
  return "an object";
}

void throwExpected(const Napi::Value& value, const char* fn, const std::string& name, const char* what) {
  throwInvalidArgument(value.Env(),
                       std::string(fn) + ": expected " + name + " to be " + what + ", received " + describe(value));
}

uint64_t toInteger(const Napi::Value& value, const char* fn, const std::string& name, uint64_t min, uint64_t max) {
  bool ok = false;
  double d = 0;
  if (value.IsNumber()) {
    d = value.As<Napi::Number>().DoubleValue();
    ok = std::isfinite(d) && std::floor(d) == d && d >= static_cast<double>(min) && d <= static_cast<double>(max);
  }
  if (!ok) {
    std::string what;
    if (min == 0 && max == kMaxSafeInteger) {
      what = "a non-negative integer";
    } else if (max == kMaxSafeInteger) {
      what = "an integer of at least " + std::to_string(min);
    } else {
      what = "an integer from " + std::to_string(min) + " to " + std::to_string(max);
    }
    throwExpected(value, fn, name, what.c_str());
  }
  return static_cast<uint64_t>(d);
}

uint32_t toUint32(const Napi::Value& value, const char* fn, const std::string& name, uint32_t min) {
  return static_cast<uint32_t>(toInteger(value, fn, name, min, 0xFFFFFFFFULL));
}

uint64_t toUint64BigInt(const Napi::Value& value, const char* fn, const std::string& name) {
  if (value.IsBigInt()) {
    bool lossless = false;
    const uint64_t v = value.As<Napi::BigInt>().Uint64Value(&lossless);
    if (lossless) return v;
  }
  throwExpected(value, fn, name, "a bigint handle from the addon");
}

bool toBool(const Napi::Value& value, const char* fn, const std::string& name) {
  if (!value.IsBoolean()) throwExpected(value, fn, name, "a boolean");
  return value.As<Napi::Boolean>().Value();
}

std::string toString(const Napi::Value& value, const char* fn, const std::string& name) {
  if (!value.IsString()) throwExpected(value, fn, name, "a string");
  return value.As<Napi::String>().Utf8Value();
}

std::vector<std::string> toStringArray(const Napi::Value& value, const char* fn, const std::string& name) {
  if (!value.IsArray()) throwExpected(value, fn, name, "an array of strings");
  const Napi::Array array = value.As<Napi::Array>();
  std::vector<std::string> out;
  out.reserve(array.Length());
  for (uint32_t i = 0; i < array.Length(); ++i) {
    out.push_back(toString(array.Get(i), fn, name + "[" + std::to_string(i) + "]"));
  }
  return out;
}

Napi::Object toObject(const Napi::Value& value, const char* fn, const std::string& name) {
  if (!value.IsObject() || value.IsArray() || value.IsFunction()) throwExpected(value, fn, name, "an object");
  return value.As<Napi::Object>();
}

std::array<uint32_t, 3> toDim3(const Napi::Value& value, const char* fn, const std::string& name) {
  if (!value.IsArray() || value.As<Napi::Array>().Length() != 3) {
    throwExpected(value, fn, name, "an array of 3 positive integers");
  }
  const Napi::Array array = value.As<Napi::Array>();
  std::array<uint32_t, 3> out{};
  for (uint32_t i = 0; i < 3; ++i) out[i] = toUint32(array.Get(i), fn, name + "[" + std::to_string(i) + "]", 1);
  return out;
}

std::string hex(uint64_t value) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(value));
  return buf;
}

}  // namespace kt
