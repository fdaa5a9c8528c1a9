package powerfs

import (
	"context"
	"os"
	"path/filepath"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// node serves one file or directory of a Disk: go-fuse's loopback does the
// reading, and every call that changes the disk goes through the Disk,
// which records what it must be able to take back.
type node struct {
	*fs.LoopbackNode
	disk *Disk
}

var (
	_ fs.NodeWrapChilder    = (*node)(nil)
	_ fs.NodeCreater        = (*node)(nil)
	_ fs.NodeMkdirer        = (*node)(nil)
	_ fs.NodeUnlinker       = (*node)(nil)
	_ fs.NodeRmdirer        = (*node)(nil)
	_ fs.NodeRenamer        = (*node)(nil)
	_ fs.NodeOpener         = (*node)(nil)
	_ fs.NodeSetattrer      = (*node)(nil)
	_ fs.NodeFsyncer        = (*node)(nil)
	_ fs.NodeAllocater      = (*node)(nil)
	_ fs.NodeCopyFileRanger = (*node)(nil)
)

// WrapChild implements fs.NodeWrapChilder: the loopback's lookups make
// nodes of this kind.
func (n *node) WrapChild(_ context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	if l, ok := ops.(*fs.LoopbackNode); ok {
		return &node{LoopbackNode: l, disk: n.disk}
	}
	return ops
}

// rel is the node's path from the disk's root.
func (n *node) rel() string { return n.Path(nil) }

func errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	return fs.ToErrno(err)
}

// Create implements fs.NodeCreater.
func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	var f *os.File
	err := n.disk.Create(n.rel(), name, func(p string) error {
		var err error
		f, err = os.OpenFile(p, backingFlags(flags)|os.O_CREATE, os.FileMode(mode))
		return err
	})
	if err != nil {
		return nil, nil, 0, errno(err)
	}
	fh, e := n.handle(f, flags)
	if e != 0 {
		return nil, nil, 0, e
	}
	ch, e := n.LoopbackNode.Lookup(ctx, name, out)
	if e != 0 {
		_ = f.Close()
		return nil, nil, 0, e
	}
	return ch, fh, 0, 0
}

// handle makes the file handle of f, opened with flags; O_TRUNC is
// carried out here, through the disk.
func (n *node) handle(f *os.File, flags uint32) (fs.FileHandle, syscall.Errno) {
	if flags&syscall.O_TRUNC != 0 {
		if err := n.disk.Truncate(int(f.Fd()), 0); err != nil {
			_ = f.Close()
			return nil, errno(err)
		}
	}
	return &file{LoopbackFile: fs.NewLoopbackFileFromOS(f), disk: n.disk, fd: int(f.Fd())}, 0
}

// Open implements fs.NodeOpener.
func (n *node) Open(_ context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	f, err := os.OpenFile(filepath.Join(n.disk.root, n.rel()), backingFlags(flags), 0)
	if err != nil {
		return nil, 0, errno(err)
	}
	fh, e := n.handle(f, flags)
	return fh, 0, e
}

// backingFlags are the flags the backing file is opened with for a file
// opened with flags: the kernel gives every write its offset, the disk
// carries out O_TRUNC itself, and a file opened to write is opened to
// read too, so that a write can save what it overwrites.
func backingFlags(flags uint32) int {
	f := int(flags &^ (syscall.O_APPEND | syscall.O_TRUNC | fuse.FMODE_EXEC))
	if f&syscall.O_ACCMODE == syscall.O_WRONLY {
		f = f&^syscall.O_ACCMODE | syscall.O_RDWR
	}
	return f
}

// Mkdir implements fs.NodeMkdirer.
func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if err := n.disk.Create(n.rel(), name, func(p string) error { return os.Mkdir(p, os.FileMode(mode)) }); err != nil {
		return nil, errno(err)
	}
	return n.LoopbackNode.Lookup(ctx, name, out)
}

// Unlink implements fs.NodeUnlinker.
func (n *node) Unlink(_ context.Context, name string) syscall.Errno {
	return errno(n.disk.Remove(n.rel(), name, false))
}

// Rmdir implements fs.NodeRmdirer.
func (n *node) Rmdir(_ context.Context, name string) syscall.Errno {
	return errno(n.disk.Remove(n.rel(), name, true))
}

// Rename implements fs.NodeRenamer; exchanging two names is refused.
func (n *node) Rename(_ context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	to, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	if flags&^unix.RENAME_NOREPLACE != 0 {
		return syscall.EINVAL
	}
	return errno(n.disk.Rename(n.rel(), name, to.rel(), newName, flags&unix.RENAME_NOREPLACE != 0))
}

// Setattr implements fs.NodeSetattrer: a size goes through the disk, the
// rest (mode, owner, times) to the loopback, and is not taken back by a
// power cut.
func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if size, ok := in.GetSize(); ok {
		fd, closeFd, err := n.fd(f)
		if err != nil {
			return errno(err)
		}
		err = n.disk.Truncate(fd, int64(size))
		closeFd()
		if err != nil {
			return errno(err)
		}
		in.Valid &^= fuse.FATTR_SIZE
	}
	return n.LoopbackNode.Setattr(ctx, nil, in, out)
}

// fd is the descriptor of the node's open file f, or of the node opened
// to read and write when there is none.
func (n *node) fd(f fs.FileHandle) (int, func(), error) {
	if h, ok := f.(*file); ok {
		return h.fd, func() {}, nil
	}
	// Read too: a truncation saves what it cuts off.
	g, err := os.OpenFile(filepath.Join(n.disk.root, n.rel()), os.O_RDWR, 0)
	if err != nil {
		return 0, nil, err
	}
	return int(g.Fd()), func() { _ = g.Close() }, nil
}

// Fsync implements fs.NodeFsyncer, for files and directories alike.
func (n *node) Fsync(_ context.Context, f fs.FileHandle, _ uint32) syscall.Errno {
	var ino uint64
	var err error
	if h, ok := f.(*file); ok {
		// The file may have been unlinked while open.
		ino, _, err = fileSize(h.fd)
	} else {
		ino, _, err = inoOf(filepath.Join(n.disk.root, n.rel()))
	}
	if err != nil {
		return errno(err)
	}
	return errno(n.disk.Sync(ino))
}

// Allocate implements fs.NodeAllocater.
func (n *node) Allocate(_ context.Context, f fs.FileHandle, off, size uint64, mode uint32) syscall.Errno {
	fd, closeFd, err := n.fd(f)
	if err != nil {
		return errno(err)
	}
	defer closeFd()
	return errno(n.disk.Allocate(fd, mode, int64(off), int64(size)))
}

// CopyFileRange implements fs.NodeCopyFileRanger: refused, so that the
// kernel copies with reads and writes, which the disk records.
func (n *node) CopyFileRange(context.Context, fs.FileHandle, uint64, *fs.Inode, fs.FileHandle, uint64, uint64, uint64) (uint32, syscall.Errno) {
	return 0, syscall.ENOSYS
}

// Names that would give an inode a second name, or none, are refused.

// Link implements fs.NodeLinker.
func (n *node) Link(context.Context, fs.InodeEmbedder, string, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

// Symlink implements fs.NodeSymlinker.
func (n *node) Symlink(context.Context, string, string, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

// Mknod implements fs.NodeMknoder.
func (n *node) Mknod(context.Context, string, uint32, uint32, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

// Tmpfile implements fs.NodeTmpfiler.
func (n *node) Tmpfile(context.Context, uint32, uint32, *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.EOPNOTSUPP
}

// file is an open file: reads go to the loopback, writes through the disk.
type file struct {
	*fs.LoopbackFile
	disk *Disk
	fd   int
}

// Write implements fs.FileWriter.
func (f *file) Write(_ context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	n, err := f.disk.WriteAt(f.fd, data, off)
	return uint32(max(n, 0)), errno(err)
}

// Setattr implements fs.FileSetattrer; the node's Setattr, which takes
// precedence, does the work.
func (f *file) Setattr(context.Context, *fuse.SetAttrIn, *fuse.AttrOut) syscall.Errno {
	return syscall.ENOSYS
}

// Allocate implements fs.FileAllocater; the node's Allocate takes
// precedence.
func (f *file) Allocate(context.Context, uint64, uint64, uint32) syscall.Errno {
	return syscall.ENOSYS
}

// Fsync implements fs.FileFsyncer; the node's Fsync takes precedence.
func (f *file) Fsync(context.Context, uint32) syscall.Errno { return syscall.ENOSYS }

// Mount serves d at dir. name tells the mount apart in the mount table
// (powerfs-NAME). The mount is made with mount(2) itself, as the node
// image has no fusermount, which needs CAP_SYS_ADMIN and /dev/fuse.
func Mount(d *Disk, dir, name string) (*fuse.Server, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(d.root, &st); err != nil {
		return nil, err
	}
	lroot := &fs.LoopbackRoot{Path: d.root, Dev: st.Dev}
	root := &node{LoopbackNode: &fs.LoopbackNode{RootData: lroot}, disk: d}
	lroot.RootNode = root
	return fs.Mount(dir, root, &fs.Options{MountOptions: fuse.MountOptions{
		DirectMountStrict: true,
		AllowOther:        true,
		FsName:            "powerfs-" + name,
		Name:              "powerfs",
	}})
}

// loopbackDir is what go-fuse's loopback directory handle does.
type loopbackDir interface {
	fs.FileReleasedirer
	fs.FileSeekdirer
	fs.FileReaddirenter
}

// dirHandle is an open directory: the loopback lists it, and its fsync
// goes to the disk.
type dirHandle struct {
	loopbackDir
	n *node
}

// Fsyncdir implements fs.FileFsyncdirer.
func (h *dirHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	return h.n.Fsync(ctx, nil, flags)
}

// OpendirHandle implements fs.NodeOpendirHandler.
func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fuseFlags, e := n.LoopbackNode.OpendirHandle(ctx, flags)
	if e != 0 {
		return nil, 0, e
	}
	ld, ok := fh.(loopbackDir)
	if !ok {
		return nil, 0, syscall.ENOTSUP
	}
	return &dirHandle{loopbackDir: ld, n: n}, fuseFlags, 0
}

// PassthroughFd implements fs.FilePassthroughFder: no passthrough, whose
// writes would go from the kernel to the backing file without the disk
// seeing them.
func (f *file) PassthroughFd() (int, bool) { return 0, false }
