# SPDX-License-Identifier: Apache-2.0
# encore's CPU tests under ctest: the same cc_test targets Bazel runs without
# a GPU (.ci/run checks that this list and Bazel's agree).
set(ENCORE_CPU_TESTS
  sealed_surface_test
  allocator/graph_arena_test
  allocator/ledger_test
  allocator/memory_budget_test
  allocator/slab_memory_test
  core/cuda_api_test
  core/cuda_error_test
  core/cuda_handle_test
  core/cuda_version_test
  core/driver_entry_test
  core/log_test
  core/nvtx_test
  core/rate_limiter_test
  core/status_test
  core/tensor_test
  graph/binding/direct_form_test
  graph/binding/memcpy_binding_test
  graph/binding/reference_scan_test
  graph/binding/variant_cache_test
  graph/body/constant_moves_test
  graph/body/method_body_test
  core/capture_fence_test
  core/capture_worker_test
  graph/capture/graph_dump_test
  graph/checks/device_check_kernel_args_test
  graph/control/conditional_support_test
  graph/control/control_args_test
  graph/manager_test
  graph/runtime/background_captures_test
  graph/method_report_test
  core/retired_owners_test
  graph/verify/block_map_test
  graph/verify/checksum_hash_test
  graph/verify/output_compare_test
  graph/verify/verify_args_test
  policy/binding_policy_test
  policy/call_signature_test
  policy/capture_policy_test
  policy/flag_table_test
  policy/learned_buckets_test
  policy/learned_padding_test
  policy/method_flags_test
  policy/method_flags_text_test
  policy/method_votes_test
  policy/pad_policy_test
  policy/padding_cost_test
  policy/rank_consensus_test
  shims/philox_reference_test
  shims/shims_args_test
)

find_package(GTest REQUIRED)

# Helpers the tests share (tests/BUILD's log_capture and process_util).
add_library(encore_test_support STATIC tests/log_capture.cc tests/process_util.cc)
encore_target_defaults(encore_test_support)
target_link_libraries(encore_test_support PUBLIC encore encore_spdlog)

foreach(_test IN LISTS ENCORE_CPU_TESTS)
  string(REPLACE "/" "_" _name "${_test}")
  add_executable(${_name} "${_test}.cc")
  encore_target_defaults(${_name})
  target_link_libraries(${_name} PRIVATE encore encore_test_support encore_spdlog GTest::gmock GTest::gtest_main)
  add_test(NAME ${_test} COMMAND ${_name})
endforeach()

math(EXPR _cudart_version "${CUDAToolkit_VERSION_MAJOR} * 1000 + ${CUDAToolkit_VERSION_MINOR} * 10")
target_compile_definitions(core_cuda_version_test PRIVATE ENCORE_CUDA_REPO_CUDART_VERSION=${_cudart_version})

# The report renderer (an sh_test in Bazel).
add_test(NAME tools/encore_report_test
  COMMAND bash "${PROJECT_SOURCE_DIR}/tools/encore_report_test.sh"
          "${PROJECT_SOURCE_DIR}/tools/encore_report.py" "${PROJECT_SOURCE_DIR}/tools/testdata/report.json")

# The house bars' scanner (an sh_test in Bazel).
add_test(NAME tools/bars_test
  COMMAND python3 "${PROJECT_SOURCE_DIR}/tools/bars_test.py" "${PROJECT_SOURCE_DIR}/tools/bars.py")

# docs/performance.md against the result files it is written from (an sh_test in Bazel).
add_test(NAME tools/perf_table_test
  COMMAND python3 "${PROJECT_SOURCE_DIR}/tools/perf_table_test.py" "${PROJECT_SOURCE_DIR}/tools/perf_table.py"
          "${PROJECT_SOURCE_DIR}/docs/performance.md" "${PROJECT_SOURCE_DIR}/docs/measurements/earlier.json")

# bench/bench_common.py's check that an encore way ran as graphs (an sh_test in Bazel).
add_test(NAME tools/bench_common_test
  COMMAND python3 "${PROJECT_SOURCE_DIR}/tools/bench_common_test.py" "${PROJECT_SOURCE_DIR}/bench/bench_common.py"
          "${PROJECT_SOURCE_DIR}/tools/perf_table.py")

# CMAKE_CUDA_ARCHITECTURES reaches nvcc and kBuiltCudaArchs.
add_library(encore_arch_probe OBJECT tools/testdata/arch_probe.cu)
encore_target_defaults(encore_arch_probe)
add_test(NAME tools/cuda_archs_test
  COMMAND bash "${PROJECT_SOURCE_DIR}/tools/cuda_archs_test.sh" "${PROJECT_SOURCE_DIR}/tools/fatbin_archs.py"
          "$<TARGET_OBJECTS:encore_arch_probe>" "${_gen}/encore/core/cuda_archs.h")
