// Compile-time proof that src/nvml_api.h matches the real nvml.h (cuda-nvml-dev): every function pointer type has the
// signature of the exported symbol that loader.cc resolves, and every constant has the header's value. Built (never
// linked into the addon) wherever nvml.h exists.
#include <nvml.h>

#include "abi_same.h"
#include "nvml_api.h"

namespace {

#define KT_NVML_SAME(pfn, symbol) KT_SAME(pfn, symbol, "nvml.h")

KT_NVML_SAME(PFN_nvmlInit, nvmlInit_v2);
KT_NVML_SAME(PFN_nvmlErrorString, nvmlErrorString);
KT_NVML_SAME(PFN_nvmlDeviceGetHandleByPciBusId, nvmlDeviceGetHandleByPciBusId_v2);
KT_NVML_SAME(PFN_nvmlDeviceGetName, nvmlDeviceGetName);
KT_NVML_SAME(PFN_nvmlDeviceGetTotalEnergyConsumption, nvmlDeviceGetTotalEnergyConsumption);
KT_NVML_SAME(PFN_nvmlDeviceGetPowerUsage, nvmlDeviceGetPowerUsage);
KT_NVML_SAME(PFN_nvmlDeviceGetEnforcedPowerLimit, nvmlDeviceGetEnforcedPowerLimit);
KT_NVML_SAME(PFN_nvmlDeviceGetClockInfo, nvmlDeviceGetClockInfo);
KT_NVML_SAME(PFN_nvmlDeviceGetTemperature, nvmlDeviceGetTemperature);

KT_VALUE(NVML_SUCCESS);
KT_VALUE(NVML_CLOCK_SM);
KT_VALUE(NVML_CLOCK_MEM);
KT_VALUE(NVML_TEMPERATURE_GPU);

}  // namespace
