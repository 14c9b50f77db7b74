# Registered from tests/engine/CMakeLists.txt.
# Draft acceptance itself is an op (Backend::accept): tests/ops/sample_test.
fd_add_test(engine_spec_stats_tests SOURCES spec_stats_test.cpp LIBS fd_engine)

# End to end on the shipped model pair (models/); slow, but in the default run.
# The lossless cases are registered one by one so that the plain greedy
# reference is computed once (a ctest fixture) and the cases run in parallel.
add_executable(engine_lossless_tests lossless_test.cpp shipped_models.cpp)
target_link_libraries(engine_lossless_tests PRIVATE fd_engine fd_backends fd_tokenizer nlohmann_json::nlohmann_json
  GTest::gtest_main)
target_compile_definitions(engine_lossless_tests PRIVATE
  FD_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
  FD_FIXTURES_DIR="${PROJECT_SOURCE_DIR}/tests/fixtures"
  FD_BINARY_DIR="${CMAKE_CURRENT_BINARY_DIR}")
add_test(NAME engine_lossless_reference COMMAND engine_lossless_tests --gtest_filter=LosslessReference.PlainGreedy)
# One BLAS thread per test process: ctest runs several at once on few cores.
set_tests_properties(engine_lossless_reference PROPERTIES FIXTURES_SETUP plain_greedy_reference LABELS slow
  ENVIRONMENT OPENBLAS_NUM_THREADS=1)
add_test(NAME engine_lossless_plain_overlapped COMMAND engine_lossless_tests --gtest_filter=LosslessReference.PlainOverlapped)
set_tests_properties(engine_lossless_plain_overlapped PROPERTIES
  FIXTURES_REQUIRED plain_greedy_reference LABELS slow ENVIRONMENT OPENBLAS_NUM_THREADS=1)
foreach(drafter Full Swa)
  foreach(mode OneRequestAtATime EightConcurrent PreemptedByATinyKVPool Overlapped)
    add_test(NAME engine_lossless_${drafter}_${mode}
      COMMAND engine_lossless_tests --gtest_filter=Shipped/LosslessDrafter.${mode}/${drafter})
    set_tests_properties(engine_lossless_${drafter}_${mode} PROPERTIES
      FIXTURES_REQUIRED plain_greedy_reference LABELS slow ENVIRONMENT OPENBLAS_NUM_THREADS=1)
  endforeach()
endforeach()
foreach(name QuantizedDrafter FewDrafts)
  add_test(NAME engine_lossless_${name} COMMAND engine_lossless_tests --gtest_filter=Lossless${name}.*)
  set_tests_properties(engine_lossless_${name} PROPERTIES
    FIXTURES_REQUIRED plain_greedy_reference LABELS slow ENVIRONMENT OPENBLAS_NUM_THREADS=1)
endforeach()

fd_add_test(engine_taps_tests
  SOURCES taps_matter_test.cpp shipped_models.cpp
  LIBS fd_engine fd_backends fd_tokenizer nlohmann_json::nlohmann_json
  LABELS slow)

fd_add_test(engine_stops_tests
  SOURCES stops_test.cpp shipped_models.cpp
  LIBS fd_engine fd_backends fd_tokenizer nlohmann_json::nlohmann_json
  LABELS slow)

fd_add_test(engine_sampling_lossless_tests
  SOURCES sampling_lossless_test.cpp shipped_models.cpp
  LIBS fd_engine fd_backends fd_tokenizer nlohmann_json::nlohmann_json
  LABELS slow)

fd_add_test(engine_reference_parity_tests
  SOURCES reference_parity_test.cpp shipped_models.cpp
  LIBS fd_engine fd_backends fd_tokenizer nlohmann_json::nlohmann_json
  LABELS slow)

# The shipped pair on the GPU: logits against the CPU backend, greedy DFlash
# == plain greedy on the GPU (164 prompts), agreement with the CPU's greedy.
# Reports SKIPPED where there is no GPU.
fd_add_test(engine_gpu_tests
  SOURCES gpu_shipped_test.cpp shipped_models.cpp
  LIBS fd_engine fd_backends fd_tokenizer nlohmann_json::nlohmann_json
  LABELS gpu)

# What serving needs from the engine: abort, take_result, finish reasons, and
# AsyncEngine (the engine on its own thread) on the shipped pair.
fd_add_test(engine_serving_tests
  SOURCES serving_test.cpp async_engine_test.cpp shipped_models.cpp
  LIBS fd_engine fd_backends fd_tokenizer nlohmann_json::nlohmann_json
  LABELS slow)

fd_add_test(engine_overlap_tests
  SOURCES overlap_test.cpp shipped_models.cpp
  LIBS fd_engine fd_backends fd_tokenizer nlohmann_json::nlohmann_json
  LABELS slow)
