# Registered from tests/engine/CMakeLists.txt.
fd_add_test(engine_acceptance_tests
  SOURCES
    acceptance_test.cpp
    acceptance_statistics_test.cpp
    spec_stats_test.cpp
  LIBS fd_engine)
