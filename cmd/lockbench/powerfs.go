package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockbench/lockbench/powerfs"
)

// newPowerFSCmd is a node's power supply and disk under the power-loss
// fault: the data directory served from a disk that can lose what was
// never fsynced, and the server started as its child.
func newPowerFSCmd() *cobra.Command {
	var disk, mount, name string
	c := &cobra.Command{
		Use:    "powerfs --disk DIR --mount DIR -- SERVER [ARGS...]",
		Short:  "Serve DIR (--mount) from a disk that loses what was never fsynced, and run the server on it",
		Hidden: true,
		Args:   cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			d, err := powerfs.Open(disk)
			if err != nil {
				return fail(exitHarness, err)
			}
			ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
			defer cancel()
			a := &powerfs.Agent{Disk: d, Mount: mount, Name: name, Cmd: args, Log: os.Stdout, Socket: powerfs.Socket}
			if err := a.Run(ctx); err != nil {
				return fail(exitHarness, err)
			}
			return nil
		},
	}
	c.Flags().StringVar(&disk, "disk", "/var/lib/lockbench-disk", "where the disk keeps its files")
	c.Flags().StringVar(&mount, "mount", "", "the server's data directory, served from the disk")
	c.Flags().StringVar(&name, "name", "node", "the mount's name in the mount table (powerfs-NAME)")
	_ = c.MarkFlagRequired("mount")
	return c
}

// newPowerCmd sends a command to the node's powerfs agent and prints its
// JSON reply.
func newPowerCmd() *cobra.Command {
	var wait time.Duration
	c := &cobra.Command{
		Use:    "power off|on|sync",
		Short:  "Cut the power of this node (at its server's next fsync, within --wait), restore it, or make its disk durable",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(context.Background(), wait+20*time.Second)
			defer cancel()
			rep, err := powerfs.Control(ctx, powerfs.Socket, powerfs.Request{Op: args[0], Wait: wait})
			if err != nil {
				return fail(exitHarness, err)
			}
			b, err := json.Marshal(rep)
			if err != nil {
				return fail(exitHarness, err)
			}
			fmt.Println(string(b))
			return nil
		},
	}
	c.Flags().DurationVar(&wait, "wait", 0, "with off: how long the cut may wait for the server's next fsync")
	return c
}
