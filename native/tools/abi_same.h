// Shared by the ABI checks (cuda_abi_check.cc, nvml_abi_check.cc): `same<Ours, Theirs>` compares two declarations as
// the ABI sees them.
#pragma once

#include <type_traits>

namespace kt_abi {

// Reduce both declarations to what the ABI sees: an enum is its (signed) underlying integer, and a pointer to an
// opaque struct is a pointer (our structs live in namespace kt, the library's in the global namespace).
template <typename T, typename = void>
struct Norm {
  using type = T;
};
template <typename T>
struct Norm<T, std::enable_if_t<std::is_enum_v<T>>> {
  using type = std::make_signed_t<std::underlying_type_t<T>>;
};
template <typename T>
struct Norm<const T, void> {
  using type = const typename Norm<T>::type;
};
template <typename T>
struct Norm<T*, void> {
  using type = std::conditional_t<std::is_class_v<T>, void*, typename Norm<T>::type*>;
};
template <typename R, typename... A>
struct Norm<R (*)(A...), void> {
  using type = typename Norm<R>::type (*)(typename Norm<A>::type...);
};

template <typename Ours, typename Theirs>
constexpr bool same = std::is_same_v<typename Norm<Ours>::type, typename Norm<Theirs>::type>;

#define KT_SAME(pfn, symbol, header) \
  static_assert(kt_abi::same<kt::pfn, decltype(&::symbol)>, #symbol " signature differs from " header)
#define KT_VALUE(name) static_assert(static_cast<long long>(kt::name) == static_cast<long long>(::name), #name " differs")

}  // namespace kt_abi
