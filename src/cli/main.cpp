#include "cli/app.h"

int main(int argc, char** argv) { return flashdraft::cli::run(argc, argv); }
