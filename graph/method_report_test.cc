// SPDX-License-Identifier: Apache-2.0
// MethodReport: every counter, the sum over devices and the JSON come from
// one list, so none can drift out of the JSON or the sum.
#include "encore/graph/method_report.h"

#include <gtest/gtest.h>

#include <string>

namespace encore {
namespace {

MethodReport Numbered(int64_t base) {
  MethodReport r;
  int64_t v = base;
#define ENCORE_X_(counter) r.counter = v++;
  ENCORE_METHOD_REPORT_COUNTERS(ENCORE_X_)
#undef ENCORE_X_
  return r;
}

TEST(MethodReportTest, JsonCarriesEveryCounterWithItsValue) {
  const MethodReport r = Numbered(100);
  const std::string j = r.ToJson();
  int64_t v = 100;
#define ENCORE_X_(counter) EXPECT_NE(j.find("\"" #counter "\":" + std::to_string(v++)), std::string::npos) << #counter;
  ENCORE_METHOD_REPORT_COUNTERS(ENCORE_X_)
#undef ENCORE_X_
}

TEST(MethodReportTest, JsonCarriesEveryOtherField) {
  MethodReport r;
  r.name = "fwd\"x";
  r.phase = MethodPhase::kReplay;
  r.graphs_off_reason = "because";
  r.captured_input_shapes = {{Shape{2, 3}}, {Shape{4}}};
  r.graph_nodes = 7;
  r.memory = MemoryStats{11, 12, 13};
  r.static_outputs.resize(2);
  r.devices = 2;
  r.binding = Binding::kDirect;
  r.binding_reason = "why";
  r.rebind_sites = 5;
  r.flags.verify = 3;
  r.flags.verify_tolerance = 0.5;
  r.last_capture_us = 812;
  r.flags.on_new_shape = ShapePolicy::kPad;
  r.flags.buckets = {1, 2, 4};
  r.buckets = {3, 9};
  r.graph_memory_bytes = 4096;
  const std::string j = r.ToJson();
  for (const char* want : {"\"name\":\"fwd\\\"x\"", "\"phase\":\"replay\"", "\"flags\":{\"graphs\":true",
                           "\"graphs_off_reason\":\"because\"", "\"captured_input_shapes\":[[[2,3]],[[4]]]",
                           "\"graph_nodes\":7", "\"memory\":{\"reserved_bytes\":11,\"live_bytes\":12,\"peak_bytes\":13}",
                           "\"static_outputs\":2", "\"devices\":2", "\"binding\":\"direct\"",
                           "\"binding_reason\":\"why\"", "\"rebind_sites\":5", "\"binding\":\"auto\",\"verify\":3",
                           "\"verify_tolerance\":0.5", "\"last_capture_us\":812", "\"on_new_shape\":\"pad\"",
                           "\"verify_tolerance\":0.5,\"buckets\":[1,2,4],\"max_padding\":0,\"capture_mode\":\"foreground\"}", "\"buckets\":[3,9]",
                           "\"graph_memory_bytes\":4096"}) {
    EXPECT_NE(j.find(want), std::string::npos) << want << " in " << j;
  }
  EXPECT_NE(MethodReport{}.ToJson().find("\"graphs_off_reason\":null"), std::string::npos);
}

TEST(MethodReportTest, AddDeviceSumsEveryCounterAndMemory) {
  MethodReport a = Numbered(1);
  a.memory = MemoryStats{1, 2, 3};
  MethodReport b = Numbered(1000);
  b.memory = MemoryStats{10, 20, 30};
  b.graphs_off_reason = "b's reason";
  a.graph_memory_bytes = 100;
  b.graph_memory_bytes = 23;
  a.buckets = {4};
  b.buckets = {8};
  a.AddDevice(b);
  EXPECT_EQ(a.graph_memory_bytes, 123u);
  EXPECT_EQ(a.buckets, std::vector<int64_t>{4});  // the first device's
  int64_t va = 1, vb = 1000;
#define ENCORE_X_(counter) EXPECT_EQ(a.counter, (va++) + (vb++)) << #counter;
  ENCORE_METHOD_REPORT_COUNTERS(ENCORE_X_)
#undef ENCORE_X_
  EXPECT_EQ(a.memory.reserved_bytes, 11u);
  EXPECT_EQ(a.memory.live_bytes, 22u);
  EXPECT_EQ(a.memory.peak_bytes, 33u);
  EXPECT_EQ(a.devices, 2);
  EXPECT_EQ(a.graphs_off_reason, "b's reason");
}

TEST(MethodReportTest, CaptureTimesSumAndTheLastIsTheLargestDevicesLast) {
  MethodReport a, b;
  a.capture_us = 500;
  a.last_capture_us = 200;
  b.capture_us = 900;
  b.last_capture_us = 700;
  a.AddDevice(b);
  EXPECT_EQ(a.capture_us, 1400);
  EXPECT_EQ(a.last_capture_us, 700);
  MethodReport c;
  c.last_capture_us = 50;
  a.AddDevice(c);
  EXPECT_EQ(a.last_capture_us, 700);
  EXPECT_NE(a.ToJson().find("\"capture_us\":1400"), std::string::npos);
}

// Every field of MethodReport appears in the JSON: a field added to the
// struct without a JSON key fails here. The struct's fields, by name:
TEST(MethodReportTest, JsonHasAKeyForEveryField) {
  const std::string j = MethodReport{}.ToJson();
  for (const char* key : {"name", "phase", "flags", "graphs_off_reason", "captured_input_shapes", "graph_nodes",
                          "memory", "static_outputs", "devices", "last_capture_us", "binding", "binding_reason",
                          "rebind_sites", "buckets", "graph_memory_bytes"}) {
    EXPECT_NE(j.find("\"" + std::string(key) + "\":"), std::string::npos) << key;
  }
#define ENCORE_X_(counter) EXPECT_NE(j.find("\"" #counter "\":"), std::string::npos) << #counter;
  ENCORE_METHOD_REPORT_COUNTERS(ENCORE_X_)
#undef ENCORE_X_
}

}  // namespace
}  // namespace encore
