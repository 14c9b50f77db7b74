# Registered from tests/engine/CMakeLists.txt.
fd_add_test(engine_acceptance_tests
  SOURCES
    acceptance_test.cpp
    acceptance_statistics_test.cpp
    spec_stats_test.cpp
  LIBS fd_engine)

# End to end on the shipped model pair (models/); slow, but in the default run.
fd_add_test(engine_lossless_tests
  SOURCES lossless_test.cpp shipped_models.cpp
  LIBS fd_engine fd_tokenizer nlohmann_json::nlohmann_json
  LABELS slow)

fd_add_test(engine_taps_tests
  SOURCES taps_matter_test.cpp shipped_models.cpp
  LIBS fd_engine fd_tokenizer nlohmann_json::nlohmann_json
  LABELS slow)

fd_add_test(engine_stops_tests
  SOURCES stops_test.cpp shipped_models.cpp
  LIBS fd_engine fd_tokenizer nlohmann_json::nlohmann_json
  LABELS slow)

fd_add_test(engine_sampling_lossless_tests
  SOURCES sampling_lossless_test.cpp shipped_models.cpp
  LIBS fd_engine fd_tokenizer nlohmann_json::nlohmann_json
  LABELS slow)
