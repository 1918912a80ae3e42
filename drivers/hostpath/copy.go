package hostpath

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Snapshots, restores and clones are full copies: a snapshot is a directory
// tree or an image file below ROOT/snapshots, and a volume made from one is
// a copy of that. Images are sparse, so copies skip holes; a 10 GiB volume
// that holds 70 MiB copies 70 MiB.

// copyImage copies the image file src to dst, keeping holes, and then grows
// dst to size if that is larger than src. dst is a temporary file that the
// caller created and renames into place afterwards. The copy is not synced
// to disk: a plugin process that crashes loses nothing that the kernel has,
// and the simulator does not simulate host crashes.
func copyImage(src, dst string, size int64) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("copy image: %w", err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return fmt.Errorf("copy image: %w", err)
	}
	defer func() {
		if cerr := out.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("copy image: %w", cerr)
		}
	}()
	if err := copySparse(out, in); err != nil {
		return fmt.Errorf("copy image %s: %w", src, err)
	}
	fi, err := out.Stat()
	if err != nil {
		return fmt.Errorf("copy image: %w", err)
	}
	if size > fi.Size() {
		if err := out.Truncate(size); err != nil {
			return fmt.Errorf("grow image copy: %w", err)
		}
	}
	return nil
}

// copySparse copies in to out, an empty file, data extent by data extent,
// and leaves holes where in has them.
func copySparse(out, in *os.File) error {
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	fd := int(in.Fd())
	for off := int64(0); off < size; {
		data, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // only a hole is left
		}
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP) {
			// No hole detection here: copy the rest as data.
			if err := copyRange(out, in, off, size-off); err != nil {
				return err
			}
			break
		}
		if err != nil {
			return fmt.Errorf("find data: %w", err)
		}
		hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
		if err != nil {
			return fmt.Errorf("find hole: %w", err)
		}
		if err := copyRange(out, in, data, hole-data); err != nil {
			return err
		}
		off = hole
	}
	// Trailing holes leave out short; the size is part of the content.
	return out.Truncate(size)
}

// copyRange copies n bytes at offset off from in to the same offset in out,
// in the kernel where it can.
func copyRange(out, in *os.File, off, n int64) error {
	inOff, outOff := off, off
	for n > 0 {
		chunk := min(n, 1<<30)
		done, err := unix.CopyFileRange(int(in.Fd()), &inOff, int(out.Fd()), &outOff, int(chunk), 0)
		if err != nil {
			if errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP) {
				// Not between these two files: copy through user space.
				_, err := io.Copy(io.NewOffsetWriter(out, outOff), io.NewSectionReader(in, inOff, n))
				return err
			}
			return fmt.Errorf("copy range: %w", err)
		}
		if done == 0 {
			return fmt.Errorf("copy range: source ended %d bytes early", n)
		}
		n -= int64(done)
	}
	return nil
}

// copyTree copies the directory tree src into dst, an existing empty
// directory, with modes, owners and file modification times. Symbolic links
// are copied as links, never followed; both trees are opened as os.Root, so
// a link or a rename inside a volume that is in use cannot lead the copy
// outside either tree. Sockets, FIFOs and device nodes are skipped: they
// carry no data. Hard links become separate files.
func copyTree(src, dst string) error {
	from, err := os.OpenRoot(src)
	if err != nil {
		return fmt.Errorf("copy tree: %w", err)
	}
	defer from.Close()
	to, err := os.OpenRoot(dst)
	if err != nil {
		return fmt.Errorf("copy tree: %w", err)
	}
	defer to.Close()

	err = fs.WalkDir(from.FS(), ".", func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := de.Info()
		if err != nil {
			return err
		}
		switch mode := info.Mode(); {
		case mode.IsDir():
			if p != "." {
				if err := to.Mkdir(p, 0o700); err != nil {
					return err
				}
			}
		case mode&fs.ModeSymlink != 0:
			target, err := from.Readlink(p)
			if err != nil {
				return err
			}
			if err := to.Symlink(target, p); err != nil {
				return err
			}
		case mode.IsRegular():
			if err := copyTreeFile(from, to, p); err != nil {
				return err
			}
		default:
			return nil
		}
		return copyMetadata(to, p, info)
	})
	if err != nil {
		return fmt.Errorf("copy tree %s: %w", src, err)
	}
	return nil
}

func copyTreeFile(from, to *os.Root, p string) error {
	in, err := from.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := to.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := copySparse(out, in); err != nil {
		out.Close()
		return fmt.Errorf("%s: %w", p, err)
	}
	return out.Close()
}

// copyMetadata gives the copy at p the owner, mode and (for files) the
// modification time of the original.
func copyMetadata(to *os.Root, p string, info fs.FileInfo) error {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		if err := to.Lchown(p, int(st.Uid), int(st.Gid)); err != nil {
			return err
		}
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		return nil // a link's own mode and times mean nothing
	}
	// Chmod after chown: chown clears set-user-ID and set-group-ID bits.
	if err := to.Chmod(p, info.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)); err != nil {
		return err
	}
	if info.Mode().IsRegular() {
		return to.Chtimes(p, info.ModTime(), info.ModTime())
	}
	return nil
}

// removeStaleTemps removes what an interrupted copy left in dir: entries
// named prefix followed by anything.
func removeStaleTemps(dir, prefix string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("look for stale temporary files: %w", err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("remove stale temporary file: %w", err)
			}
		}
	}
	return nil
}
