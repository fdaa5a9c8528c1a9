package clusters

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
)

// EngineSocket is where an engine's API socket is on its own host: the
// controller container reaches the engine through it. Whoever holds it
// holds root on that host.
const EngineSocket = "/var/run/docker.sock"

// Controller is a lockbench command run inside a container on the engine's
// host, so that the harness reads the same kernel clock as the clients and
// the store: history times are on one CLOCK_MONOTONIC only there.
type Controller struct {
	// Image holds the lockbench binary (the node image).
	Image string
	// Cmd is the command, lockbench's arguments included.
	Cmd []string
	Env []string
	// Inputs are local files copied into the container, each at its own
	// absolute path, before it starts.
	Inputs []string
	// Dirs are absolute directories made in the container before it starts
	// (where an output file goes).
	Dirs []string
	// Outputs are absolute paths (directories or files) copied back from
	// the container, to the same paths here, after it ends.
	Outputs []string
	// Stdout and Stderr receive the command's output as it comes.
	Stdout, Stderr io.Writer
	// Say prints the controller's own messages for people.
	Say io.Writer
}

// RunController runs c to its end and returns the command's exit code. When
// ctx ends it sends the command SIGINT, which a lockbench run turns into a
// teardown, and goes on waiting. Whatever happens, the outputs are copied
// back and the container is removed.
func (e *Engine) RunController(ctx context.Context, c Controller) (code int, err error) {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	name := "lockbench-controller-" + id
	h, err := e.self(ctx)
	if err != nil {
		return 0, err
	}
	// The container is the liveness record of the runs inside it (see
	// Runs): they find it by its name, and label themselves with its id.
	labels := h.labels()
	labels[Label], labels[roleLabel] = id, ControllerRole
	resp, err := e.ContainerCreate(ctx,
		&container.Config{Image: c.Image, Cmd: c.Cmd, Env: append(slices.Clone(c.Env), ControllerEnv+"="+name), Labels: labels},
		&container.HostConfig{
			// The engine's API is all the controller talks to: no network.
			NetworkMode: "none",
			Binds:       []string{EngineSocket + ":" + EngineSocket},
		}, nil, nil, name)
	if err != nil {
		return 0, fmt.Errorf("create the controller container: %w", err)
	}
	fmt.Fprintf(c.Say, "controller %s: in a container on the engine's host (lockbench clean --run %s removes it if this process dies)\n", name, id)
	// Its own context: the container must go even after Ctrl-C.
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, rerr := e.RemoveRun(rctx, id); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}()
	if len(c.Inputs)+len(c.Dirs) > 0 {
		tarball, err := tarFiles(c.Inputs, c.Dirs)
		if err != nil {
			return 0, err
		}
		if err := e.CopyToContainer(ctx, resp.ID, "/", tarball, container.CopyToContainerOptions{}); err != nil {
			return 0, fmt.Errorf("copy inputs into the controller: %w", err)
		}
	}
	waitc, errc := e.ContainerWait(context.Background(), resp.ID, container.WaitConditionNextExit)
	if err := e.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
		return 0, fmt.Errorf("start the controller: %w", err)
	}
	logs, err := e.ContainerLogs(context.Background(), resp.ID, container.LogsOptions{ShowStdout: true, ShowStderr: true, Follow: true})
	if err != nil {
		return 0, fmt.Errorf("follow the controller: %w", err)
	}
	copied := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(c.Stdout, c.Stderr, logs)
		logs.Close()
		copied <- err
	}()
	done := ctx.Done()
wait:
	for {
		select {
		case <-done:
			done = nil
			// The run inside heals, saves and removes, then exits.
			_ = e.ContainerKill(context.Background(), resp.ID, "SIGINT")
		case w := <-waitc:
			code = int(w.StatusCode)
			if w.Error != nil {
				err = fmt.Errorf("controller: %s", w.Error.Message)
			}
			break wait
		case werr := <-errc:
			err = fmt.Errorf("wait for the controller: %w", werr)
			break wait
		}
	}
	<-copied
	for _, out := range c.Outputs {
		if cerr := e.copyBack(resp.ID, out); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}
	return code, err
}

// copyBack copies path (absolute) out of the container to the same path
// here, merging a directory into what is already there.
func (e *Engine) copyBack(id, path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rc, _, err := e.CopyFromContainer(ctx, id, path)
	if err != nil {
		// A command refused before it wrote anything leaves nothing to copy.
		if client.IsErrNotFound(err) {
			return nil
		}
		return fmt.Errorf("copy %s back from the controller: %w", path, err)
	}
	defer rc.Close()
	return untar(rc, filepath.Dir(path))
}

// untar writes a tar stream from the engine under dir. It is written here
// rather than taken from moby's archive module because lockbench needs only
// regular files and directories, and none of that module's ownership,
// whiteout and xattr handling; names that would leave dir are refused.
func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the results from the controller: %w", err)
		}
		name := filepath.Clean(h.Name)
		if !filepath.IsLocal(name) {
			return fmt.Errorf("the controller sent %q, outside %s", h.Name, dir)
		}
		target := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode).Perm())
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("write %s: %w", target, err)
			}
		}
	}
}

// tarFiles is a tar of local files and of directories, named by their
// absolute paths, with their parents, to be unpacked at the container's
// root.
func tarFiles(files, dirs []string) (io.Reader, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	made := map[string]bool{}
	mkdirs := func(d string) error {
		var parents []string
		for ; d != "." && d != "/" && !made[d]; d = filepath.Dir(d) {
			made[d] = true
			parents = append([]string{d}, parents...)
		}
		for _, d := range parents {
			if err := tw.WriteHeader(&tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
				return err
			}
		}
		return nil
	}
	for _, d := range dirs {
		if err := mkdirs(strings.TrimPrefix(filepath.ToSlash(d), "/")); err != nil {
			return nil, err
		}
	}
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("controller input: %w", err)
		}
		rel := strings.TrimPrefix(filepath.ToSlash(p), "/")
		if err := mkdirs(filepath.Dir(rel)); err != nil {
			return nil, err
		}
		if err := tw.WriteHeader(&tar.Header{Name: rel, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data))}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	return &buf, tw.Close()
}
