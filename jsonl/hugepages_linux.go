package jsonl

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the size of an x86-64 or arm64 transparent huge page.
const hugePage = 2 << 20

// hugePages asks the kernel to back values with huge pages where they
// fit. A long run's values are the largest thing a check holds, hundreds
// of megabytes written once by the workers: faulted in 4 KB at a time
// (and first read as zeros by the collector, which marks the new array
// at once, so that each page then faults again to be copied), the faults
// took as long as the decoding on a virtual machine, where a fault is
// dear. The advice covers only the array's whole huge pages, which are
// its own memory; a kernel that ignores it, or refuses it, leaves the
// pages as they were.
func hugePages[T any](values []T) {
	if len(values) == 0 {
		return
	}
	base := unsafe.Pointer(unsafe.SliceData(values))
	start := uintptr(base)
	end := start + uintptr(len(values))*unsafe.Sizeof(values[0])
	from, to := (start+hugePage-1)&^(hugePage-1), end&^(hugePage-1)
	if from >= to {
		return
	}
	_ = unix.Madvise(unsafe.Slice((*byte)(unsafe.Add(base, from-start)), to-from), unix.MADV_HUGEPAGE)
}
