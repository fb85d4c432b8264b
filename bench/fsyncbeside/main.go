//go:build linux

// Command fsyncbeside measures what a durable node's commits wait for while
// a snapshot is written to the same disk: the latency of 4 KiB writes with
// O_DSYNC (a log's commits) alone, then beside a large file written and sent
// to the disk every -step bytes with sync_file_range, as
// persistence/snapshotsync.go writes a snapshot back; or beside an old
// snapshot's file deleted, whole or shrunk a step at a time first
// (persistence/snapshotreap.go).
//
//	fsyncbeside -dir /data -step 4mb                      # a snapshot written as fast as it goes
//	fsyncbeside -dir /data -step 1mb -rate 150            # at an encoder's pace, MB/s
//	fsyncbeside -dir /data -delete 32mb                   # an old snapshot shrunk 32 MiB at a time, then removed
//	fsyncbeside -dir /data -delete 0                      # an old snapshot removed at once
//
// docs/performance.md ("The write-back's step") quotes it.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rlserver/rlserver/server"
)

func main() {
	dir := flag.String("dir", ".", "a directory on the disk to measure")
	step := flag.String("step", "4mb", "write the large file back every this many bytes (as Redis's configuration writes sizes: 256kb, 4mb)")
	size := flag.Int("mb", 350, "the large file's size, MB (a snapshot of 10M keys)")
	rate := flag.Int("rate", 0, "write the large file at this many MB/s (0: as fast as the disk takes it)")
	alone := flag.Duration("alone", 3*time.Second, "how long to measure the commits alone first")
	del := flag.String("delete", "", "instead of writing the large file, write it first and measure its deletion: shrunk this many bytes at a time (2mb; 0: removed at once)")
	flag.Parse()
	if err := run(*dir, *step, *del, int64(*size)*1e6, int64(*rate)*1e6, *alone); err != nil {
		fmt.Fprintln(os.Stderr, "fsyncbeside:", err)
		os.Exit(1)
	}
}

// run measures the commits to a log in a directory made in dir, alone, then
// beside the large file's writing (del empty) or deletion.
func run(dir, step, del string, size, rate int64, alone time.Duration) error {
	tmp, err := os.MkdirTemp(dir, "fsyncbeside")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	log, err := os.OpenFile(filepath.Join(tmp, "log"), os.O_CREATE|os.O_WRONLY|unix.O_DSYNC, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	big, err := os.Create(filepath.Join(tmp, "snapshot"))
	if err != nil {
		return err
	}
	defer big.Close()

	stepBytes, err := server.ParseMemorySize(step)
	if err == nil && stepBytes == 0 {
		err = fmt.Errorf("-step %s: must be more than 0 bytes", step)
	}
	if err != nil {
		return err
	}
	var what string
	var work func() error
	if del == "" {
		what = fmt.Sprintf("%d MB written back every %d KiB", size/1e6, stepBytes>>10)
		work = func() error { return writeBack(big, stepBytes, size, rate) }
	} else {
		shrinkBytes, err := server.ParseMemorySize(del)
		if err != nil {
			return err
		}
		if err := writeBack(big, 4<<20, size, 0); err != nil {
			return err
		}
		what = fmt.Sprintf("%d MB deleted in steps of %d KiB", size/1e6, shrinkBytes>>10)
		work = func() error { return deleteFile(big.Name(), shrinkBytes, size) }
	}

	stop := make(chan struct{})
	time.AfterFunc(alone, func() { close(stop) })
	lat, err := commits(log, stop)
	if err != nil {
		return err
	}
	report("alone", lat)
	stop = make(chan struct{})
	errs := make(chan error, 1)
	start := time.Now()
	go func() {
		defer close(stop)
		errs <- work()
	}()
	if lat, err = commits(log, stop); err != nil {
		return err
	}
	if err := <-errs; err != nil {
		return err
	}
	report(fmt.Sprintf("beside %s in %v", what, time.Since(start).Round(time.Millisecond)), lat)
	return nil
}

// deleteFile deletes the file at path, of size bytes, truncated step bytes
// at a time from its end with a millisecond between (step 0: removed at
// once), as persistence/snapshotreap.go does.
func deleteFile(path string, step, size int64) error {
	for left := size; step > 0 && left > 0; {
		left = max(left-step, 0)
		if err := os.Truncate(path, left); err != nil {
			return err
		}
		time.Sleep(time.Millisecond)
	}
	return os.Remove(path)
}

// commits writes 4 KiB at the start of log, one write at a time, until stop
// is closed, and returns each write's latency.
func commits(log *os.File, stop <-chan struct{}) ([]time.Duration, error) {
	buf := make([]byte, 4096)
	var lat []time.Duration
	for {
		select {
		case <-stop:
			return lat, nil
		default:
		}
		t := time.Now()
		if _, err := log.WriteAt(buf, 0); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(t))
	}
}

// writeBack writes size bytes to f in 64 KiB writes, sending every step
// written to the disk and waiting for it (persistence's writeBack), at rate
// bytes a second when rate is not 0, then syncs f.
func writeBack(f *os.File, step, size, rate int64) error {
	start := time.Now()
	chunk := make([]byte, 64<<10)
	var written, synced int64
	for written < size {
		if _, err := f.Write(chunk); err != nil {
			return err
		}
		written += int64(len(chunk))
		if written-synced >= step {
			flags := unix.SYNC_FILE_RANGE_WAIT_BEFORE | unix.SYNC_FILE_RANGE_WRITE | unix.SYNC_FILE_RANGE_WAIT_AFTER
			if err := unix.SyncFileRange(int(f.Fd()), synced, written-synced, flags); err != nil {
				return err
			}
			synced = written
		}
		if rate > 0 {
			if d := time.Duration(float64(written)/float64(rate)*1e9) - time.Since(start); d > 0 {
				time.Sleep(d)
			}
		}
	}
	return f.Sync()
}

func report(what string, lat []time.Duration) {
	if len(lat) == 0 {
		fmt.Printf("%s: no commit completed\n", what)
		return
	}
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[int(float64(len(lat)-1)*p)].Round(time.Microsecond) }
	fmt.Printf("%s: %d commits, p50 %v, p99 %v, p99.9 %v, max %v\n", what, len(lat), q(.5), q(.99), q(.999), lat[len(lat)-1].Round(time.Microsecond))
}
