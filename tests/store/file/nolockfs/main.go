// nolockfs mounts a loopback view of a directory whose POSIX locks do nothing:
// every lock is granted, and no lock is ever reported as held. It stands in for
// the network and FUSE file systems that cannot keep SQLite's locks.
//
//	nolockfs SOURCE_DIR MOUNT_POINT   (runs until SIGTERM/SIGINT, then unmounts)
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

type node struct{ fs.LoopbackNode }

type file struct{ fs.FileHandle }

func (f *file) Getlk(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32, out *fuse.FileLock) syscall.Errno {
	*out = *lk
	out.Typ = syscall.F_UNLCK
	return 0
}

func (f *file) Setlk(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return 0
}

func (f *file) Setlkw(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return 0
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fuseFlags, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return &file{fh}, fuseFlags, 0
}

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	inode, fh, fuseFlags, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	return inode, &file{fh}, fuseFlags, 0
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: nolockfs SOURCE_DIR MOUNT_POINT")
		os.Exit(2)
	}
	root := &fs.LoopbackRoot{Path: os.Args[1]}
	st := syscall.Stat_t{}
	if err := syscall.Stat(os.Args[1], &st); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	root.Dev = uint64(st.Dev)
	root.NewNode = func(r *fs.LoopbackRoot, parent *fs.Inode, name string, st *syscall.Stat_t) fs.InodeEmbedder {
		return &node{fs.LoopbackNode{RootData: r}}
	}
	rootNode := &node{fs.LoopbackNode{RootData: root}}
	root.RootNode = rootNode
	server, err := fs.Mount(os.Args[2], rootNode, &fs.Options{MountOptions: fuse.MountOptions{
		EnableLocks: true, DirectMount: true, FsName: "nolockfs", Name: "nolockfs",
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "mount:", err)
		os.Exit(1)
	}
	fmt.Println("mounted")
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-signals; server.Unmount() }()
	server.Wait()
}
