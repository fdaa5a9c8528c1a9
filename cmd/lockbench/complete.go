package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/images"
	"github.com/lockbench/lockbench/link"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/matrix"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/runner"
	"github.com/lockbench/lockbench/store"
)

// fences are the store's fence modes, as the flags spell them.
var fences = []string{string(store.FenceNone), string(store.FenceWrites), string(store.FenceAll)}

// flagValues are the values shell completion offers for each flag that
// takes one of a fixed set; a flag taking a list completes its last item.
var flagValues = map[string][]string{
	"backend": backends.Names(), "backends": backends.Names(),
	"workload": config.Workloads, "workloads": config.Workloads,
	"nemesis": runner.Nemeses(), "nemeses": runner.Nemeses(),
	"fence": fences, "fences": fences,
	"store": runner.Stores(), "stores": runner.Stores(),
	"pause-target":      config.Targets,
	"target":            config.Targets,
	"link":              link.Shapes,
	"link-path":         link.Paths,
	"power-target":      config.PowerTargets,
	"redis-persistence": config.Persistences,
	"pg-lock":           locks.PgModes,
	"image-method":      {string(images.Auto), string(images.Dockerfile), string(images.Debootstrap)},
	"controller":        {controllerAuto, controllerLocal, controllerEngine},
	"variant":           backends.VariantNames(),
	"failpoint":         backends.FailpointNames(),
	"on-lock-error":     config.LockErrors,
	"preset":            {matrix.PresetMutants},
}

// completeFlags registers completion for every flag of cmd listed in
// flagValues.
func completeFlags(cmd *cobra.Command) {
	for name, values := range flagValues {
		if cmd.Flags().Lookup(name) == nil {
			continue
		}
		if err := cmd.RegisterFlagCompletionFunc(name, completeList(values)); err != nil {
			// Only a flag registered twice gets here: a programming error.
			panic(err)
		}
	}
}

// completeList offers values for the item being typed, after any items
// already given and separated by commas, or by config.Combine in a list
// of faults (--nemesis pause,ki → kill; --nemeses none,pause+ki → kill).
func completeList(values []string) cobra.CompletionFunc {
	sep := func(r rune) bool { return r == ',' || string(r) == config.Combine }
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		cut := strings.LastIndexFunc(toComplete, sep) + 1
		done, typed := strings.FieldsFunc(toComplete[:cut], sep), toComplete[cut:]
		var out []string
		for _, v := range values {
			if strings.HasPrefix(v, typed) && !slices.Contains(done, v) {
				out = append(out, toComplete[:cut]+v)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeRunDirs offers the run directories under the results tree
// (--results, default results) that start with what was typed; anything
// else falls back to the shell's directory completion.
func completeRunDirs(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	root := "results"
	if f := cmd.Flags().Lookup("results"); f != nil {
		root = f.Value.String()
	}
	if _, err := os.Stat(root); err != nil {
		return nil, cobra.ShellCompDirectiveFilterDirs
	}
	tree, err := report.Index(root)
	if err != nil {
		return nil, cobra.ShellCompDirectiveFilterDirs
	}
	var out []string
	for _, r := range tree.Runs {
		dir := filepath.Join(root, filepath.FromSlash(r.Path))
		if strings.HasPrefix(dir, toComplete) {
			out = append(out, dir+"\t"+r.Verdict)
		}
	}
	if len(out) == 0 {
		return nil, cobra.ShellCompDirectiveFilterDirs
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
