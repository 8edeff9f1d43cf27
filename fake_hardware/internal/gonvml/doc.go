// Package gonvml holds only tests: they build the lab's libnvidia-ml.so.1 (cmd/libnvidia-ml) and
// load it through go-nvml, as vendor GPU drivers do, and compare what NVML answers, and what
// nvidia-smi (cmd/nvidia-smi) shows over it, with what the node's hardware profile says (HW-10). A separate package, because a test of package main would
// link the library's exported functions into the test binary, and go-nvml would call those
// instead of the loaded library.
//
// TestLibraryDefinesEveryFunctionOfNvmlH always runs. The others skip unless the environment
// points at rendered nodes (tests/e2e/test_nvml_library.py sets it):
//
//	DRALAB_NVML_NODES  a directory with a directory per node, each holding the node's tree (sys),
//	                   its driver root (driver-root, from fake_hardware/nvml.py) and expect.json,
//	                   what the profile says (type expectation)
package gonvml
