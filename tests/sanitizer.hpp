#pragma once
// IPUSIM_TEST_ASAN: defined in AddressSanitizer builds, whose shadow memory and quarantine
// make a process's peak memory say nothing about ipusim's own.
#if defined(__SANITIZE_ADDRESS__)
#define IPUSIM_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define IPUSIM_TEST_ASAN 1
#endif
#endif
