// Argument checks for every entry point, done before any CUDA call (lovell/sharp habit): a wrong type or range gives a
// TypeError with code INVALID_ARGUMENT that names the function and the argument, e.g.
// "memAlloc: expected bytes to be a non-negative integer, received -1".
#pragma once

#include <napi.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace kt {

constexpr uint64_t kMaxSafeInteger = 9007199254740991ULL;  // Number.MAX_SAFE_INTEGER

/** A short rendering of a JS value for messages: -1, "text", 5n, undefined, null, an array, an object ... */
std::string describe(const Napi::Value& value);

/** "fn: expected name to be what, received value" as a TypeError with code INVALID_ARGUMENT. */
[[noreturn]] void throwExpected(const Napi::Value& value, const char* fn, const std::string& name, const char* what);

/** A Number that is an integer in [min, max] (max at most 2^53-1). */
uint64_t toInteger(const Napi::Value& value, const char* fn, const std::string& name, uint64_t min = 0,
                   uint64_t max = kMaxSafeInteger);
uint32_t toUint32(const Napi::Value& value, const char* fn, const std::string& name, uint32_t min = 0);
/** A BigInt in [0, 2^64) (handles and device pointers). */
uint64_t toUint64BigInt(const Napi::Value& value, const char* fn, const std::string& name);
bool toBool(const Napi::Value& value, const char* fn, const std::string& name);
std::string toString(const Napi::Value& value, const char* fn, const std::string& name);
std::vector<std::string> toStringArray(const Napi::Value& value, const char* fn, const std::string& name);
Napi::Object toObject(const Napi::Value& value, const char* fn, const std::string& name);
/** An array of exactly 3 integers, each in [1, 2^32-1] (grid and block sizes). */
std::array<uint32_t, 3> toDim3(const Napi::Value& value, const char* fn, const std::string& name);

/** 0x-prefixed hex, for pointers in messages. */
std::string hex(uint64_t value);

}  // namespace kt
