#pragma once
// Picks a backend by name for the command line and the tests.
#include <memory>
#include <string>
#include <vector>

#include "ops/backend.h"

namespace flashdraft::ops {

// True when this build has the CUDA backend and a GPU is visible.
bool cuda_available();
// GPUs visible to this build (0 without CUDA).
int cuda_device_count();

// "cpu", "cuda" (device 0), or "auto": cuda when cuda_available(), else cpu.
// Throws flashdraft::Error when cuda is asked for and absent (saying whether
// the build lacks CUDA or the machine lacks a GPU), or for any other name.
std::shared_ptr<Backend> make_backend(const std::string& device);

// One backend per tensor-parallel rank: "cpu" (each its own CPU backend) or
// "cuda" (rank r on GPU r; an Error when fewer are visible).
std::vector<std::shared_ptr<Backend>> make_rank_backends(const std::string& device, int ranks);

}  // namespace flashdraft::ops
