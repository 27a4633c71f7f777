#pragma once
// One include for Catch2 v2 (Debian 12: catch2/catch.hpp) and v3 (Ubuntu 24.04: catch2/catch_all.hpp).
#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
#define REPLAYSSM_CATCH3 1
using Catch::Approx;  // v2 declares it at global scope
#else
#include <catch2/catch.hpp>
#endif
