# SPDX-License-Identifier: Apache-2.0
# encore::torch, the PyTorch adapter (interop/torch/), built only where
# PyTorch's C++ headers and libraries are found: TORCH_DIR (a cache or
# environment variable naming a torch package folder or libtorch), else
# python3's torch package. Otherwise one `message(STATUS ...)` line says why
# it is skipped. Included from CMakeLists.txt after encore's targets.
#
# With ENCORE_BUILD_TORCH_TESTS (default ON where found) it also builds the
# adapter's tests (CPU ones under ctest), the benchmark bench/torch_aoti_bench
# and the example examples/torch_mlp; tools/torch_suite.sh runs them.

set(_encore_find_torch_py [[
import importlib.util, os
spec = importlib.util.find_spec("torch")
print(os.path.dirname(spec.origin) if spec and spec.origin else "")
]])

# PyTorch's CMake config sets CUDA flags of its own and overrides
# CMAKE_CUDA_ARCHITECTURES in the scope it runs in: a function scope keeps
# them off encore's targets. Sets _encore_torch_why (empty when found) and
# _encore_torch_dir in the caller.
function(_encore_find_torch)
  if(NOT DEFINED TORCH_DIR AND DEFINED ENV{TORCH_DIR})
    set(TORCH_DIR "$ENV{TORCH_DIR}")
  endif()
  set(_where "TORCH_DIR")
  if(NOT DEFINED TORCH_DIR)
    set(_where "python3's torch package")
    find_program(_encore_python3 NAMES python3)
    if(NOT _encore_python3)
      set(_encore_torch_why "no python3 to find torch with (set TORCH_DIR)" PARENT_SCOPE)
      return()
    endif()
    execute_process(COMMAND "${_encore_python3}" -c "${_encore_find_torch_py}"
                    OUTPUT_VARIABLE TORCH_DIR OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET TIMEOUT 60)
    if(NOT TORCH_DIR)
      set(_encore_torch_why "python3 has no torch package (set TORCH_DIR)" PARENT_SCOPE)
      return()
    endif()
  endif()
  if(NOT EXISTS "${TORCH_DIR}/share/cmake/Torch/TorchConfig.cmake")
    set(_encore_torch_why "${TORCH_DIR} (${_where}) has no share/cmake/Torch/TorchConfig.cmake" PARENT_SCOPE)
    return()
  endif()
  if(NOT EXISTS "${TORCH_DIR}/lib/libtorch_cuda.so")
    set(_encore_torch_why "${TORCH_DIR} (${_where}) is not a CUDA build of PyTorch (no lib/libtorch_cuda.so)" PARENT_SCOPE)
    return()
  endif()
  if(NOT ENCORE_CUDART STREQUAL "shared")
    set(_encore_torch_why "PyTorch found at ${TORCH_DIR}, but ENCORE_CUDART is '${ENCORE_CUDART}': configure with -DENCORE_CUDART=shared so that encore and PyTorch share one CUDA runtime" PARENT_SCOPE)
    return()
  endif()
  # An architecture list skips PyTorch's GPU probe (a compile and run per
  # configure); it only feeds PyTorch's own nvcc flags, which encore's
  # targets do not use.
  if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
    set(ENV{TORCH_CUDA_ARCH_LIST} "9.0")
  endif()
  find_package(Torch QUIET PATHS "${TORCH_DIR}/share/cmake/Torch" NO_DEFAULT_PATH)
  if(NOT Torch_FOUND)
    set(_encore_torch_why "find_package(Torch) failed for ${TORCH_DIR} (${_where})" PARENT_SCOPE)
    return()
  endif()
  if(TORCH_CXX_FLAGS MATCHES "_GLIBCXX_USE_CXX11_ABI=0")
    set(_encore_torch_why "PyTorch at ${TORCH_DIR} uses the pre-C++11 libstdc++ ABI, which encore does not" PARENT_SCOPE)
    return()
  endif()
  set(_encore_torch_why "" PARENT_SCOPE)
  set(_encore_torch_dir "${TORCH_DIR}" PARENT_SCOPE)
  set(_encore_torch_libraries "${TORCH_LIBRARIES}" PARENT_SCOPE)
  set(_encore_torch_version "${Torch_VERSION}" PARENT_SCOPE)
endfunction()

_encore_find_torch()
if(_encore_torch_why)
  message(STATUS "encore: PyTorch not used (${_encore_torch_why}): skipping encore::torch")
  set(ENCORE_HAS_TORCH OFF)
  return()
endif()
message(STATUS "encore: PyTorch ${_encore_torch_version} at ${_encore_torch_dir}: building encore::torch")
set(ENCORE_HAS_TORCH ON)

# encore/interop/torch.h and encore/interop/torch/*.h, as Bazel's include_prefix
# lays them out. ${_inc}/encore/interop is a link to the source folder
# interop/ (CMakeLists.txt), so encore/interop/torch/ resolves already; the
# entry header lives in a folder of its own, never as a link written into
# the source tree. The tests, benchmark and example also include
# encore/examples/ and encore/bench/.
set(_encore_torch_inc "${CMAKE_CURRENT_BINARY_DIR}/torch_include")
file(MAKE_DIRECTORY "${_encore_torch_inc}/encore/interop")
file(CREATE_LINK "${CMAKE_CURRENT_SOURCE_DIR}/interop/torch/torch.h" "${_encore_torch_inc}/encore/interop/torch.h" SYMBOLIC)
if(NOT EXISTS "${_inc}/encore/interop/torch/torch.h")
  file(CREATE_LINK "${CMAKE_CURRENT_SOURCE_DIR}/interop/torch" "${_encore_torch_inc}/encore/interop/torch" SYMBOLIC)
endif()
foreach(_d examples bench)
  file(CREATE_LINK "${CMAKE_CURRENT_SOURCE_DIR}/${_d}" "${_inc}/encore/${_d}" SYMBOLIC)
endforeach()

add_library(encore_torch STATIC
  interop/torch/aoti_method.cc interop/torch/scope.cc interop/torch/tensor_ref.cc interop/torch/torch_status.cc)
add_library(encore::torch ALIAS encore_torch)
encore_target_defaults(encore_torch)
target_include_directories(encore_torch PUBLIC $<BUILD_INTERFACE:${_encore_torch_inc}>)
target_link_libraries(encore_torch PUBLIC encore ${_encore_torch_libraries})
set_target_properties(encore_torch PROPERTIES EXPORT_NAME torch)

option(ENCORE_BUILD_TORCH_TESTS "Build the PyTorch adapter's tests, benchmark and example" ON)
if(NOT ENCORE_BUILD_TORCH_TESTS)
  return()
endif()

# GoogleTest: ENCORE_GTEST_SOURCE (a source tree, built here: what
# tools/torch_suite.sh deps stages for machines without it), else installed.
if(ENCORE_GTEST_SOURCE)
  set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
  add_subdirectory("${ENCORE_GTEST_SOURCE}" "${CMAKE_BINARY_DIR}/googletest" EXCLUDE_FROM_ALL)
  foreach(_t gtest gtest_main gmock gmock_main)
    if(NOT TARGET GTest::${_t})
      add_library(GTest::${_t} ALIAS ${_t})
    endif()
  endforeach()
else()
  find_package(GTest REQUIRED)
endif()
if(NOT TARGET encore_test_support)
  add_library(encore_test_support STATIC tests/log_capture.cc tests/process_util.cc)
  encore_target_defaults(encore_test_support)
  target_link_libraries(encore_test_support PUBLIC encore encore_spdlog)
endif()

set(_encore_torch_cpu_tests interop/torch/tensor_ref_test interop/torch/aoti_method_test)
set(_encore_torch_gpu_tests interop/torch/scope_gpu_test interop/torch/aoti_gpu_test)
foreach(_test IN LISTS _encore_torch_cpu_tests _encore_torch_gpu_tests)
  string(REPLACE "/" "_" _name "${_test}")
  add_executable(${_name} "${_test}.cc")
  encore_target_defaults(${_name})
  target_link_libraries(${_name} PRIVATE encore_torch encore_test_support encore_spdlog GTest::gmock GTest::gtest_main)
endforeach()
foreach(_test IN LISTS _encore_torch_cpu_tests)
  string(REPLACE "/" "_" _name "${_test}")
  add_test(NAME ${_test} COMMAND ${_name})
endforeach()

add_library(encore_bench_util STATIC bench/bench_util.cc)
encore_target_defaults(encore_bench_util)
target_link_libraries(encore_bench_util PUBLIC encore encore_spdlog)
add_executable(bench_torch_aoti_bench bench/torch_aoti_bench.cc)
encore_target_defaults(bench_torch_aoti_bench)
target_link_libraries(bench_torch_aoti_bench PRIVATE encore_torch encore_bench_util encore_spdlog)
add_executable(example_torch_mlp examples/torch_mlp.cc)
encore_target_defaults(example_torch_mlp)
target_link_libraries(example_torch_mlp PRIVATE encore_torch encore_spdlog)
add_executable(tools_torch_aoti_load_probe tools/torch_aoti_load_probe.cc)
encore_target_defaults(tools_torch_aoti_load_probe)
target_link_libraries(tools_torch_aoti_load_probe PRIVATE ${_encore_torch_libraries})
