package main

import (
	"context"
	"errors"
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
	var opts runner.CleanOptions
	cmd := &cobra.Command{
		Use:   "clean",
		Short: "Remove the containers and networks of runs that are not live (left by killed runs, --leave-running)",
		Long: `Remove the containers and networks that runs left behind, first saving into
its results directory the store log of a run whose harness died.

A run is live while the lockbench that started it runs: it holds the standard
input of the run's liveness container, which ends when that process ends,
however it ends (with --controller engine, the controller container is the
record). A live run, and every container and network it labelled, is left
alone unless --include-live is given, and --run ID of a live run without it is
refused (exit 254); a run of an older lockbench, which has no such record, is
not live. The store log of a live run is never copied.`,
		Example: `  # what would go, without removing or saving anything
  lockbench clean --dry-run
  # remove one run, even while its harness still runs (that run then fails)
  lockbench clean --run 3f2a9c1e --include-live`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			ctx := context.Background()
			eng, err := clusters.Connect(ctx)
			if err != nil {
				return fail(exitHarness, err)
			}
			defer eng.Close()
			done, err := runner.Clean(ctx, eng, opts)
			saved, removed := "saved", "removed"
			if opts.DryRun {
				saved, removed = "would save", "would remove"
			}
			for _, s := range done.Saved {
				fmt.Printf("%s %s\n", saved, s)
			}
			for _, l := range done.Removed {
				fmt.Printf("%s %s %s (run %s)\n", removed, l.Kind, l.Name, l.RunID)
			}
			for _, r := range done.Kept {
				fmt.Printf("kept run %s: live, %s (--include-live removes it)\n", r.ID, r.Why)
			}
			switch {
			case errors.Is(err, runner.ErrLive):
				return fail(exitUsage, err)
			case err != nil:
				return fail(exitHarness, err)
			}
			if len(done.Removed) == 0 {
				fmt.Println("nothing to remove")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.RunID, "run", "", "remove only what this run id left (default: every run that is not live)")
	cmd.Flags().BoolVar(&opts.IncludeLive, "include-live", false, "remove live runs too (needed for --run of a live run); their harness then fails")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "list what would be removed and saved, and remove and save nothing")
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
