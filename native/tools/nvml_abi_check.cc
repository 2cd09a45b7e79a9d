// Compile-time proof that src/nvml_api.h matches the real nvml.h (cuda-nvml-dev): every function pointer type has the
// signature of the exported symbol that loader.cc resolves, and every constant has the header's value. Built (never
// linked into the addon) wherever nvml.h exists.
#include <nvml.h>

#include <type_traits>

#include "nvml_api.h"

namespace {

// As in cuda_abi_check.cc: an enum is its underlying integer, a pointer to an opaque struct is a pointer.
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

#define KT_SAME(pfn, symbol) static_assert(same<kt::pfn, decltype(&::symbol)>, #symbol " signature differs from nvml.h")

KT_SAME(PFN_nvmlInit, nvmlInit_v2);
KT_SAME(PFN_nvmlErrorString, nvmlErrorString);
KT_SAME(PFN_nvmlDeviceGetHandleByPciBusId, nvmlDeviceGetHandleByPciBusId_v2);
KT_SAME(PFN_nvmlDeviceGetName, nvmlDeviceGetName);
KT_SAME(PFN_nvmlDeviceGetTotalEnergyConsumption, nvmlDeviceGetTotalEnergyConsumption);
KT_SAME(PFN_nvmlDeviceGetPowerUsage, nvmlDeviceGetPowerUsage);
KT_SAME(PFN_nvmlDeviceGetEnforcedPowerLimit, nvmlDeviceGetEnforcedPowerLimit);
KT_SAME(PFN_nvmlDeviceGetClockInfo, nvmlDeviceGetClockInfo);
KT_SAME(PFN_nvmlDeviceGetTemperature, nvmlDeviceGetTemperature);

#define KT_VALUE(name) static_assert(static_cast<long long>(kt::name) == static_cast<long long>(::name), #name " differs")

KT_VALUE(NVML_SUCCESS);
KT_VALUE(NVML_CLOCK_SM);
KT_VALUE(NVML_CLOCK_MEM);
KT_VALUE(NVML_TEMPERATURE_GPU);

}  // namespace
