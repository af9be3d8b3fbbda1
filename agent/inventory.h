// What this node offers: its GPU count (from NVML when the driver's library is installed,
// otherwise a configured number of virtual GPUs) and its labels (such as `block`).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"

namespace hg::agent {

inline constexpr const char* kNvmlLibrary = "libnvidia-ml.so.1";

// The number of GPUs NVML sees, loading `library` at run time (dlopen). nullopt when the
// library is absent or NVML does not initialise: that is a machine without NVIDIA's driver, not
// an error. `why` (when given) receives the reason it was not used.
std::optional<int> NvmlGpuCount(const std::string& library = kNvmlLibrary,
                                std::string* why = nullptr);

struct InventoryOptions {
  std::string gpu_source = "auto";  // auto (NVML when present, else virtual) | nvml | virtual
  int virtual_gpus = -1;            // --gpus; -1 = not given
  std::string nvml_library = kNvmlLibrary;
  std::vector<std::string> labels;  // "k=v" as given to --label
  std::string block;                // --block: shorthand for label block=...
};

struct Inventory {
  int gpus = 0;
  std::string gpu_source;  // "nvml" | "virtual"
  std::map<std::string, std::string> labels;
};

// Resolves the options against the machine. Errors name the option at fault.
Result<Inventory> DetectInventory(const InventoryOptions& opt);

// True for names the API accepts: [A-Za-z0-9._-]{1,64}.
bool ValidName(const std::string& s);

}  // namespace hg::agent
