package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"

	"github.com/spf13/cobra"
)

// newClockOffsetCmd sets the offset a node's clock shim adds to the wall
// clock. It writes the 8 bytes in place: the shim has the file mapped, and
// a new file would not be seen.
func newClockOffsetCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "clock-offset FILE NANOSECONDS",
		Short:  "Set the wall-clock offset a node's clock shim applies",
		Hidden: true,
		Args:   cobra.ExactArgs(2),
		RunE: func(_ *cobra.Command, args []string) error {
			ns, err := strconv.ParseInt(args[1], 10, 64)
			if err != nil {
				return fail(exitUsage, fmt.Errorf("offset: %w", err))
			}
			f, err := os.OpenFile(args[0], os.O_WRONLY, 0)
			if err != nil {
				return fail(exitHarness, fmt.Errorf("clock file: %w", err))
			}
			defer f.Close()
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], uint64(ns))
			if _, err := f.WriteAt(b[:], 0); err != nil {
				return fail(exitHarness, fmt.Errorf("clock file: %w", err))
			}
			return nil
		},
	}
}
