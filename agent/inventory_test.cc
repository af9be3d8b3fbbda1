#include "agent/inventory.h"

#include <gtest/gtest.h>

namespace hg::agent {
namespace {

TEST(Inventory, MissingNvmlLibraryIsNotAnError) {
  std::string why;
  EXPECT_FALSE(NvmlGpuCount("libhourglass-no-such-nvml.so.1", &why));
  EXPECT_NE(why.find("not loaded"), std::string::npos) << why;
}

TEST(Inventory, FallsBackToVirtualGpusWithoutNvml) {
  InventoryOptions o;
  o.nvml_library = "libhourglass-no-such-nvml.so.1";
  o.virtual_gpus = 4;
  o.block = "b0";
  o.labels = {"rack=r12", "zone=us-east"};
  auto inv = DetectInventory(o);
  ASSERT_TRUE(inv) << inv.error().ToString();
  EXPECT_EQ(inv->gpus, 4);
  EXPECT_EQ(inv->gpu_source, "virtual");
  EXPECT_EQ(inv->labels, (std::map<std::string, std::string>{
                             {"block", "b0"}, {"rack", "r12"}, {"zone", "us-east"}}));
}

TEST(Inventory, VirtualSourceSkipsNvml) {
  InventoryOptions o;
  o.gpu_source = "virtual";
  o.virtual_gpus = 2;
  auto inv = DetectInventory(o);
  ASSERT_TRUE(inv);
  EXPECT_EQ(inv->gpu_source, "virtual");
  EXPECT_EQ(inv->gpus, 2);
}

TEST(Inventory, BadOptionsNameTheOption) {
  InventoryOptions base;
  base.nvml_library = "libhourglass-no-such-nvml.so.1";
  base.virtual_gpus = 8;
  struct Case {
    std::function<void(InventoryOptions&)> change;
    std::string field;
  } cases[] = {
      {[](InventoryOptions& o) { o.virtual_gpus = -1; }, "--gpus"},
      {[](InventoryOptions& o) { o.virtual_gpus = 5000; }, "--gpus"},
      {[](InventoryOptions& o) { o.labels = {"novalue"}; }, "--label"},
      {[](InventoryOptions& o) { o.labels = {"bad key=x"}; }, "--label"},
      {[](InventoryOptions& o) {
         o.labels = {"k=v", "k=w"};
       },
       "--label"},
      {[](InventoryOptions& o) { o.block = "b/0"; }, "--block"},
      {[](InventoryOptions& o) {
         o.block = "b0";
         o.labels = {"block=b1"};
       },
       "--block"},
      {[](InventoryOptions& o) { o.gpu_source = "cuda"; }, "--gpu-source"},
      {[](InventoryOptions& o) { o.gpu_source = "nvml"; }, "--gpu-source"},
  };
  for (const Case& c : cases) {
    InventoryOptions o = base;
    c.change(o);
    auto inv = DetectInventory(o);
    ASSERT_FALSE(inv) << c.field;
    EXPECT_EQ(inv.error().field, c.field) << inv.error().reason;
  }
}

}  // namespace
}  // namespace hg::agent
