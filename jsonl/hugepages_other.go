//go:build !linux

package jsonl

// hugePages does nothing where there is no madvise(MADV_HUGEPAGE).
func hugePages[T any](values []T) {}
