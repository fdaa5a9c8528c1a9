package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lockbench/lockbench/clusters"
	"github.com/lockbench/lockbench/images"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/runner"
)

// controllerEnv is set in the controller container to the engine's address
// as the user gave it: the lockbench inside records it in test.json, and
// never starts another controller.
const controllerEnv = "LOCKBENCH_CONTROLLER_FOR"

// Where the harness runs (--controller).
const (
	controllerAuto   = "auto"
	controllerLocal  = "local"
	controllerEngine = "engine"
)

// controllerFlag is --controller, which run and matrix share.
type controllerFlag struct{ mode string }

func (c *controllerFlag) add(f *pflag.FlagSet) {
	f.StringVar(&c.mode, "controller", controllerAuto, "where the harness runs: local (here), engine (in a container on the Docker engine's host, "+
		"given its socket), auto (engine when DOCKER_HOST is tcp:// or ssh://, else local)")
}

// onEngine reports whether this command must run in a controller container
// on the engine's host. History times come from one kernel's monotonic
// clock: the harness's must be the clients' and the store's.
func (c *controllerFlag) onEngine() (bool, error) {
	if os.Getenv(controllerEnv) != "" {
		return false, nil
	}
	switch c.mode {
	case controllerLocal:
		return false, nil
	case controllerEngine:
		return true, nil
	case controllerAuto:
		u, err := url.Parse(os.Getenv("DOCKER_HOST"))
		// A loopback address may be a tunnel to another machine: only
		// the local socket proves the engine is here.
		return err == nil && (u.Scheme == "tcp" || u.Scheme == "ssh" || u.Scheme == "http" || u.Scheme == "https"), nil
	}
	return false, fail(exitUsage, fmt.Errorf("--controller %q: want %s, %s or %s", c.mode, controllerAuto, controllerLocal, controllerEngine))
}

// controllerOf is where this harness runs, for test.json.
func controllerOf() rundir.Controller {
	if e := os.Getenv(controllerEnv); e != "" {
		return rundir.Controller{OnEngine: true, Engine: e}
	}
	return rundir.Controller{Engine: os.Getenv("DOCKER_HOST")}
}

// fileFlags are the flags of a command that name local files: what the
// controller container needs copied in, or has to send back.
type fileFlags struct {
	inputs  []string // files read: copied in
	outputs []string // files written: copied back
}

// runOnEngine runs cmd, as given, in a controller container on the engine's
// host, and brings its results directory (and any other file it writes)
// back to the same paths here. Inside, every path is the absolute local
// one, so that what the command prints and stores names the files where
// they end up.
//
// The catalog is not the controller's to write: rec, the caller's, records
// the runs that came back, here.
func runOnEngine(ctx context.Context, cmd *cobra.Command, opts runner.Options, files fileFlags, rec *recorder) error {
	results, err := filepath.Abs(opts.Results)
	if err != nil {
		return fail(exitUsage, fmt.Errorf("--results: %w", err))
	}
	args := append([]string{"lockbench"}, strings.Fields(cmd.CommandPath())[1:]...)
	var spec clusters.Controller
	var visitErr error
	cmd.Flags().Visit(func(f *pflag.Flag) {
		v := f.Value.String()
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			v = strings.Join(sv.GetSlice(), ",")
		}
		switch {
		case f.Name == "controller" || f.Name == "results" || f.Name == "catalog":
			return
		case slices.Contains(files.inputs, f.Name), slices.Contains(files.outputs, f.Name):
			abs, err := filepath.Abs(v)
			if err != nil {
				visitErr = fail(exitUsage, fmt.Errorf("--%s: %w", f.Name, err))
			}
			v = abs
			if slices.Contains(files.outputs, f.Name) {
				spec.Dirs, spec.Outputs = append(spec.Dirs, filepath.Dir(abs)), append(spec.Outputs, abs)
			} else if f.Name == "replay" {
				spec.Inputs = append(spec.Inputs, filepath.Join(abs, rundir.TestFile))
			} else {
				spec.Inputs = append(spec.Inputs, abs)
			}
		}
		args = append(args, "--"+f.Name+"="+v)
	})
	if visitErr != nil {
		return visitErr
	}
	spec.Cmd = append(args, "--results="+results)
	spec.Outputs = append(spec.Outputs, results)
	eng, err := clusters.Connect(ctx)
	if err != nil {
		return fail(exitHarness, err)
	}
	defer eng.Close()
	if spec.Image, err = nodeImage(ctx, eng, opts); err != nil {
		return err
	}
	engine := os.Getenv("DOCKER_HOST")
	if engine == "" {
		engine = eng.DaemonHost()
	}
	spec.Env = []string{controllerEnv + "=" + engine}
	spec.Stdout, spec.Stderr, spec.Say = os.Stdout, os.Stderr, opts.Out
	before := seen(results)
	code, err := eng.RunController(ctx, spec)
	// What came back was judged inside, however the command ended.
	if rerr := rec.recordNew(results, before); rerr != nil {
		return errors.Join(rerr, err)
	}
	switch {
	case err != nil:
		return fail(exitHarness, err)
	case code != 0:
		// The command inside said why.
		return exitCode(code)
	}
	return nil
}

// nodeImage builds the node image of this binary when it is missing.
func nodeImage(ctx context.Context, eng *clusters.Engine, opts runner.Options) (string, error) {
	tag, err := images.Ensure(ctx, eng.Client, images.Options{Binary: opts.Binary, Method: opts.ImageMethod, Mirror: opts.Mirror, Log: opts.Out})
	if err != nil {
		return "", fail(exitHarness, fmt.Errorf("node image: %w", err))
	}
	return tag, nil
}

// ensureNodeImage is nodeImage on the engine DOCKER_HOST names.
func ensureNodeImage(ctx context.Context, opts runner.Options) error {
	eng, err := clusters.Connect(ctx)
	if err != nil {
		return fail(exitHarness, err)
	}
	defer eng.Close()
	_, err = nodeImage(ctx, eng, opts)
	return err
}
