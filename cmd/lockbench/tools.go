package main

import (
	"context"
	"fmt"
	"os"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/lockbench/lockbench/clusters"
	"github.com/lockbench/lockbench/images"
	"github.com/lockbench/lockbench/runner"
	"github.com/lockbench/lockbench/verdict"
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print lockbench's version and VCS revision (as stored in every run's test.json)",
		Args:  cobra.NoArgs,
		Run: func(*cobra.Command, []string) {
			fmt.Printf("lockbench %s (%s)\n", verdict.Version(), runtime.Version())
		},
	}
}

func newCleanCmd() *cobra.Command {
	var runID string
	cmd := &cobra.Command{
		Use:   "clean",
		Short: "Remove the containers and networks that earlier runs left behind",
		Args:  cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			ctx := context.Background()
			eng, err := clusters.Connect(ctx)
			if err != nil {
				return fail(exitHarness, err)
			}
			defer eng.Close()
			removed, saved, err := runner.Clean(ctx, eng, runID)
			for _, s := range saved {
				fmt.Printf("saved %s\n", s)
			}
			for _, l := range removed {
				fmt.Printf("removed %s %s (run %s)\n", l.Kind, l.Name, l.RunID)
			}
			if err != nil {
				return fail(exitHarness, err)
			}
			if len(removed) == 0 {
				fmt.Println("nothing to remove")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&runID, "run", "", "remove only what this run id left (default: every run)")
	return cmd
}

func newImagesCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "images", Short: "Manage the locally built node image"}
	var method, mirror string
	var force, jvm, pg bool
	build := &cobra.Command{
		Use:   "build",
		Short: "Build the node image (Debian's redis-server, fault tools, this binary) if missing",
		Args:  cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			m, err := images.ParseMethod(method)
			if err != nil {
				return fail(exitUsage, err)
			}
			bin, err := os.Executable()
			if err != nil {
				return fail(exitHarness, fmt.Errorf("find the lockbench binary: %w", err))
			}
			ctx := context.Background()
			eng, err := clusters.Connect(ctx)
			if err != nil {
				return fail(exitHarness, err)
			}
			defer eng.Close()
			opts := images.Options{Binary: bin, Method: m, Mirror: mirror, Force: force, Log: os.Stdout}
			tag, err := images.Ensure(ctx, eng.Client, opts)
			if err != nil {
				return fail(exitHarness, err)
			}
			fmt.Println(tag)
			for _, k := range []struct {
				want bool
				kind images.Kind
			}{{jvm, images.JVM}, {pg, images.Postgres}} {
				if !k.want {
					continue
				}
				if tag, err = images.EnsureKind(ctx, eng.Client, k.kind, opts); err != nil {
					return fail(exitHarness, err)
				}
				fmt.Println(tag)
			}
			return nil
		},
	}
	build.Flags().BoolVar(&force, "force", false, "rebuild the base and the node image even if present")
	build.Flags().BoolVar(&jvm, "jvm", false, "also build the image of the lock services that run on the JVM, otherwise built by the first run that needs it")
	build.Flags().BoolVar(&pg, "postgres", false, "also build the PostgreSQL image, otherwise built by the first run that needs it")
	addImageFlags(build.Flags(), &method, &mirror)
	cmd.AddCommand(build)
	return cmd
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
