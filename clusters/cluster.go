package clusters

import (
	"archive/tar"
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/pkg/stdcopy"
)

// Node is one container of a cluster.
type Node struct {
	Name string // host name on the run's network, e.g. "redis", "store", "c1"
	Role string // "redis", "store", "client"
	Cmd  []string
	Caps []string // Linux capabilities beyond Docker's default set
	// Devices are host devices the node may use (/dev/fuse).
	Devices []string
	// Labels are added to the run's own; they let a later `lockbench clean`
	// find what belongs where without the process that started it.
	Labels map[string]string
	// Tmpfs are directories kept in memory.
	Tmpfs []string
	Env   []string
	// Image, when set, is the image the node runs instead of the
	// cluster's node image.
	Image string
	// Copy are files of this machine put into the container before it
	// starts, by their path in the container: the lockbench binary, for a
	// node whose image does not hold it. They go through the engine's API,
	// so they reach a remote engine too.
	Copy map[string]string
	// Stdin keeps the node's standard input open until Send writes to it:
	// a node whose command waits there for what is known only later (the
	// run's epoch, fixed once the lock service is healthy) can be started
	// beside the service, and pay for its start while the service comes
	// up, instead of after it.
	Stdin bool
	ID    string
}

// Cluster is the containers of one run on their private network.
type Cluster struct {
	eng     *Engine
	runID   string
	image   string
	network string

	// harness labels everything of the run; live is its liveness
	// container, nil when a controller container is the run's record.
	harness Harness
	live    *liveness

	mu    sync.Mutex
	nodes map[string]*Node
}

// New creates the run's liveness record, then the run's private network;
// the record's container starts in the background, and StartAll waits for
// it. The record comes first so that a `lockbench clean` beside the run
// never finds part of it without one, and takes a starting run for one
// whose harness died.
func New(ctx context.Context, eng *Engine, runID, image string) (*Cluster, error) {
	h, err := eng.self(ctx)
	if err != nil {
		return nil, err
	}
	c := &Cluster{eng: eng, runID: runID, image: image, network: "lockbench-" + runID, harness: h, nodes: map[string]*Node{}}
	// What was made before a failure goes, even after Ctrl-C ended ctx.
	undo := func(err error) (*Cluster, error) {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return nil, errors.Join(err, c.Down(dctx))
	}
	if h.Controller == "" {
		if c.live, err = eng.startLiveness(ctx, runID, image, h); err != nil {
			return undo(err)
		}
	}
	labels := h.labels()
	labels[Label] = runID
	_, err = eng.NetworkCreate(ctx, c.network, network.CreateOptions{
		Driver: "bridge",
		// Internal: the run's containers reach one another and nothing else.
		Internal: true,
		Labels:   labels,
	})
	if err != nil {
		return undo(fmt.Errorf("create network %s: %w", c.network, err))
	}
	return c, nil
}

// RunID is the value of the run's label.
func (c *Cluster) RunID() string { return c.runID }

// Start creates and starts n.
func (c *Cluster) Start(ctx context.Context, n Node) error {
	labels := c.harness.labels()
	labels[Label], labels[Label+".node"], labels[roleLabel] = c.runID, n.Name, n.Role
	for k, v := range n.Labels {
		labels[k] = v
	}
	tmpfs := map[string]string{}
	for _, d := range n.Tmpfs {
		tmpfs[d] = ""
	}
	var devices []container.DeviceMapping
	for _, d := range n.Devices {
		devices = append(devices, container.DeviceMapping{PathOnHost: d, PathInContainer: d, CgroupPermissions: "rwm"})
	}
	resp, err := c.eng.ContainerCreate(ctx,
		&container.Config{Image: cmp.Or(n.Image, c.image), Cmd: n.Cmd, Env: n.Env, Hostname: n.Name, Labels: labels,
			OpenStdin: n.Stdin, StdinOnce: n.Stdin},
		&container.HostConfig{
			NetworkMode: container.NetworkMode(c.network),
			CapAdd:      n.Caps,
			Tmpfs:       tmpfs,
			Resources:   container.Resources{Devices: devices},
		},
		&network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
			c.network: {Aliases: []string{n.Name}},
		}},
		nil, c.network+"-"+n.Name)
	if err != nil {
		return fmt.Errorf("create %s: %w", n.Name, err)
	}
	n.ID = resp.ID
	c.mu.Lock()
	c.nodes[n.Name] = &n
	c.mu.Unlock()
	if err := c.copyIn(ctx, n); err != nil {
		return err
	}
	if err := c.eng.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
		return fmt.Errorf("start %s: %w", n.Name, err)
	}
	return nil
}

// copyIn puts n.Copy into its container, created and not yet started.
func (c *Cluster) copyIn(ctx context.Context, n Node) error {
	for dst, src := range n.Copy {
		f, err := os.Open(src)
		if err != nil {
			return fmt.Errorf("copy into %s: %w", n.Name, err)
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return fmt.Errorf("copy into %s: %w", n.Name, err)
		}
		// One file in a tar stream, written as the engine reads it.
		pr, pw := io.Pipe()
		go func() {
			tw := tar.NewWriter(pw)
			err := tw.WriteHeader(&tar.Header{Name: path.Base(dst), Mode: int64(st.Mode().Perm()), Size: st.Size(), Typeflag: tar.TypeReg})
			if err == nil {
				_, err = io.Copy(tw, f)
			}
			if err == nil {
				err = tw.Close()
			}
			f.Close()
			pw.CloseWithError(err)
		}()
		err = c.eng.CopyToContainer(ctx, n.ID, path.Dir(dst), pr, container.CopyToContainerOptions{})
		pr.CloseWithError(err)
		if err != nil {
			return fmt.Errorf("copy %s into %s:%s: %w", src, n.Name, dst, err)
		}
	}
	return nil
}

// Send writes data to the standard input of a node started with Stdin and
// closes it: the node reads data, then end of file.
func (c *Cluster) Send(ctx context.Context, name string, data []byte) error {
	n, err := c.node(name)
	if err != nil {
		return err
	}
	att, err := c.eng.ContainerAttach(ctx, n.ID, container.AttachOptions{Stream: true, Stdin: true})
	if err != nil {
		return fmt.Errorf("attach to %s: %w", name, err)
	}
	defer att.Close()
	if _, err := att.Conn.Write(data); err != nil {
		return fmt.Errorf("write to %s: %w", name, err)
	}
	// Closing our side ends the attachment, and with StdinOnce the
	// engine closes the node's standard input after what was written.
	if err := att.CloseWrite(); err != nil {
		return fmt.Errorf("write to %s: %w", name, err)
	}
	return nil
}

// StartAll starts nodes concurrently and returns the first error.
func (c *Cluster) StartAll(ctx context.Context, nodes []Node) error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.Start(ctx, n)
		}()
	}
	wg.Wait()
	// The liveness container started beside them (see New): a run
	// without its record must not go on.
	return errors.Join(append(errs, c.live.wait())...)
}

func (c *Cluster) node(name string) (*Node, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.nodes[name]
	if !ok {
		return nil, fmt.Errorf("no node %q in this cluster", name)
	}
	return n, nil
}

// Signal sends sig (e.g. "SIGSTOP") to the node's main process.
func (c *Cluster) Signal(ctx context.Context, name, sig string) error {
	n, err := c.node(name)
	if err != nil {
		return err
	}
	if err := c.eng.ContainerKill(ctx, n.ID, sig); err != nil {
		return fmt.Errorf("%s to %s: %w", sig, name, err)
	}
	return nil
}

// Pause freezes every process of the node (the cgroup freezer): it
// answers nothing until Unpause.
func (c *Cluster) Pause(ctx context.Context, name string) error {
	n, err := c.node(name)
	if err != nil {
		return err
	}
	if err := c.eng.ContainerPause(ctx, n.ID); err != nil {
		return fmt.Errorf("pause %s: %w", name, err)
	}
	return nil
}

// Unpause thaws a paused node; a node that is not paused is left alone.
func (c *Cluster) Unpause(ctx context.Context, name string) error {
	n, state, err := c.state(ctx, name)
	if err != nil || !state.Paused {
		return err
	}
	if err := c.eng.ContainerUnpause(ctx, n.ID); err != nil {
		return fmt.Errorf("unpause %s: %w", name, err)
	}
	return nil
}

// Restart starts a node's stopped container again, with its command and
// its file system as they were; a running node is left alone.
func (c *Cluster) Restart(ctx context.Context, name string) error {
	n, state, err := c.state(ctx, name)
	if err != nil || state.Running {
		return err
	}
	if err := c.eng.ContainerStart(ctx, n.ID, container.StartOptions{}); err != nil {
		return fmt.Errorf("restart %s: %w", name, err)
	}
	return nil
}

// state is the node's container state as the engine sees it now.
func (c *Cluster) state(ctx context.Context, name string) (*Node, container.State, error) {
	n, err := c.node(name)
	if err != nil {
		return nil, container.State{}, err
	}
	ins, err := c.eng.ContainerInspect(ctx, n.ID)
	if err != nil {
		return nil, container.State{}, fmt.Errorf("inspect %s: %w", name, err)
	}
	if ins.State == nil {
		return n, container.State{}, nil
	}
	return n, *ins.State, nil
}

// IP is the node's address on the run's network.
func (c *Cluster) IP(ctx context.Context, name string) (string, error) {
	n, err := c.node(name)
	if err != nil {
		return "", err
	}
	ins, err := c.eng.ContainerInspect(ctx, n.ID)
	if err != nil {
		return "", fmt.Errorf("inspect %s: %w", name, err)
	}
	if ins.NetworkSettings == nil || ins.NetworkSettings.Networks[c.network] == nil || ins.NetworkSettings.Networks[c.network].IPAddress == "" {
		return "", fmt.Errorf("%s has no address on %s", name, c.network)
	}
	return ins.NetworkSettings.Networks[c.network].IPAddress, nil
}

// Exec runs cmd in the node and returns its standard output; a non-zero exit
// is an error carrying its standard error.
func (c *Cluster) Exec(ctx context.Context, name string, cmd ...string) (string, error) {
	n, err := c.node(name)
	if err != nil {
		return "", err
	}
	ex, err := c.eng.ContainerExecCreate(ctx, n.ID, container.ExecOptions{Cmd: cmd, AttachStdout: true, AttachStderr: true})
	if cerrdefs.IsConflict(err) {
		// The engine refuses an exec in a container that is not running
		// (409): said apart, so that a caller undoing something in a node
		// that has since died can tell there is nothing left to undo.
		return "", fmt.Errorf("exec in %s: %w: %w", name, ErrNotRunning, err)
	}
	if err != nil {
		return "", fmt.Errorf("exec in %s: %w", name, err)
	}
	att, err := c.eng.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		return "", fmt.Errorf("exec in %s: %w", name, err)
	}
	defer att.Close()
	// The attached stream is a hijacked connection that ctx does not
	// reach: without this, an exec whose ctx ended (a wait for a service
	// cut short by the run's end) would hold its caller until the command
	// in the node ended by itself, which for a probe loop is up to its
	// whole bound.
	defer context.AfterFunc(ctx, att.Close)()
	var out, errOut bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &errOut, att.Reader); err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return "", fmt.Errorf("exec in %s: %w", name, err)
	}
	ins, err := c.eng.ContainerExecInspect(ctx, ex.ID)
	if err != nil {
		return "", fmt.Errorf("exec in %s: %w", name, err)
	}
	if ins.ExitCode != 0 {
		return out.String(), fmt.Errorf("%s in %s exited %d: %s", strings.Join(cmd, " "), name, ins.ExitCode, strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}

// ErrNotRunning marks an Exec in a node whose container is not running.
var ErrNotRunning = errors.New("the container is not running")

// WaitReady runs probe in the node until it succeeds or timeout passes, and
// returns what the successful probe printed. The probe is retried inside
// the node by a shell loop, every 20 ms, so that the wait costs one exec
// through the engine instead of one a try: an exec is several round trips
// to the engine and often takes longer than a try itself, which made a
// service seem ready a few hundred milliseconds after it was. An exec that
// fails to run at all (the node still starting) is tried again. When the
// time is up, one more try outside the loop says why the probe fails.
func (c *Cluster) WaitReady(ctx context.Context, name string, timeout time.Duration, probe ...string) (string, error) {
	wait, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	secs := strconv.Itoa(max(1, int(math.Ceil(timeout.Seconds()))))
	loop := append([]string{"timeout", secs, "sh", "-c", `until out=$("$@" 2>/dev/null); do sleep 0.02; done; printf '%s\n' "$out"`, "probe"}, probe...)
	for {
		out, err := c.Exec(wait, name, loop...)
		if err == nil {
			return out, nil
		}
		select {
		case <-wait.Done():
			if ctx.Err() == nil {
				last, lcancel := context.WithTimeout(ctx, 5*time.Second)
				if _, perr := c.Exec(last, name, probe...); perr != nil {
					err = perr
				}
				lcancel()
			}
			return "", fmt.Errorf("%s not ready after %s: %w", name, timeout, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Lines follows the node's standard output from its start, calling fn for
// each line, until the container exits or ctx ends. Standard error goes to
// errw.
func (c *Cluster) Lines(ctx context.Context, name string, errw io.Writer, fn func([]byte)) error {
	n, err := c.node(name)
	if err != nil {
		return err
	}
	rc, err := c.eng.ContainerLogs(ctx, n.ID, container.LogsOptions{ShowStdout: true, ShowStderr: true, Follow: true})
	if err != nil {
		return fmt.Errorf("logs of %s: %w", name, err)
	}
	defer rc.Close()
	pr, pw := io.Pipe()
	copied := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(pw, errw, rc)
		pw.CloseWithError(err)
		copied <- err
	}()
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fn(sc.Bytes())
	}
	scanErr := sc.Err()
	pr.Close()
	if err := <-copied; err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.ErrClosedPipe) {
		return fmt.Errorf("logs of %s: %w", name, err)
	}
	if scanErr != nil {
		return fmt.Errorf("logs of %s: %w", name, scanErr)
	}
	return nil
}

// Logs returns everything the node wrote so far, both streams interleaved.
func (c *Cluster) Logs(ctx context.Context, name string) ([]byte, error) {
	n, err := c.node(name)
	if err != nil {
		return nil, err
	}
	rc, err := c.eng.ContainerLogs(ctx, n.ID, container.LogsOptions{ShowStdout: true, ShowStderr: true, Timestamps: true})
	if err != nil {
		return nil, fmt.Errorf("logs of %s: %w", name, err)
	}
	defer rc.Close()
	var buf bytes.Buffer
	if _, err := stdcopy.StdCopy(&buf, &buf, rc); err != nil {
		return nil, fmt.Errorf("logs of %s: %w", name, err)
	}
	return buf.Bytes(), nil
}

// Wait blocks until the node's container exits and returns its exit code.
func (c *Cluster) Wait(ctx context.Context, name string) (int64, error) {
	n, err := c.node(name)
	if err != nil {
		return 0, err
	}
	okc, errc := c.eng.ContainerWait(ctx, n.ID, container.WaitConditionNotRunning)
	select {
	case r := <-okc:
		return r.StatusCode, nil
	case err := <-errc:
		return 0, fmt.Errorf("wait for %s: %w", name, err)
	}
}

// ReadFile copies one regular file out of the node (running or stopped).
func (c *Cluster) ReadFile(ctx context.Context, name, path string) ([]byte, error) {
	n, err := c.node(name)
	if err != nil {
		return nil, err
	}
	data, err := CopyFile(ctx, c.eng, n.ID, path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return data, nil
}

// CopyFile copies one regular file out of a container, running or stopped.
func CopyFile(ctx context.Context, eng *Engine, id, path string) ([]byte, error) {
	rc, _, err := eng.CopyFromContainer(ctx, id, path)
	if err != nil {
		return nil, fmt.Errorf("copy %s: %w", path, err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	if _, err := tr.Next(); err != nil {
		return nil, fmt.Errorf("copy %s: %w", path, err)
	}
	data, err := io.ReadAll(tr)
	if err != nil {
		return nil, fmt.Errorf("copy %s: %w", path, err)
	}
	return data, nil
}

// Down removes every container and the network of the run, whatever state
// they are in, its liveness record after the other containers.
func (c *Cluster) Down(ctx context.Context) error {
	_ = c.live.wait() // a start under way would race the removal
	_, err := c.eng.RemoveRun(ctx, c.runID)
	c.live.close()
	return err
}

// Release ends the run's liveness record and keeps the rest: what stays up
// (--leave-running) is no longer a live run, and a plain `lockbench clean`
// may remove it.
func (c *Cluster) Release(ctx context.Context) error {
	if c.live == nil {
		return nil
	}
	_ = c.live.wait()
	err := c.eng.ContainerRemove(ctx, c.live.id, container.RemoveOptions{Force: true})
	c.live.close()
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove the run's liveness container: %w", err)
	}
	return nil
}
