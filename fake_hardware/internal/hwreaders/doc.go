// Package hwreaders holds only tests: they read an emulated node's hardware with the libraries
// real drivers discover hardware with (ghw for PCI functions, NUMA topology and netdevs; netlink
// for links; rdmamap for RDMA devices and their device nodes) and compare what those libraries see
// with what the node's hardware profile says (HW-07, HW-09).
//
// The tests skip unless the environment points at a node (tests/e2e/test_hardware_readers.py sets it):
//
//	DRALAB_HW_ROOT    the directory holding the node's `sys` tree
//	DRALAB_HW_EXPECT  a JSON file of what the profile says (type expectation)
//	DRALAB_HW_NETNS   the node's network namespace, for the netlink test and rdmamap's netdev lookup
//	DRALAB_HW_DEV     the node's /dev entries (its /dev/infiniband), for the rdmamap test
package hwreaders
