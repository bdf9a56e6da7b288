package cuda

import (
	"fmt"
	"runtime"
	"unsafe"
)

// dim3 is a grid or block size.
type dim3 struct{ x, y, z uint32 }

// threads1D is the block size of the grid-stride kernels.
const threads1D = 256

// grid1D returns the grid for n items of a grid-stride kernel: one thread
// per item up to 2^20 blocks, which then loop.
func grid1D(n int64) dim3 {
	blocks := (n + threads1D - 1) / threads1D
	return dim3{uint32(min(max(blocks, 1), 1<<20)), 1, 1}
}

// function returns kernel fn of source file, compiling and loading the
// file's module at first use (from the disk cache when it holds it).
// Runs on the device thread.
func (b *Backend) function(file, fn string) (cuHandle, error) {
	key := file + ":" + fn
	if f, ok := b.funcs[key]; ok {
		return f, nil
	}
	mod, ok := b.modules[file]
	if !ok {
		src, err := kernelSource(file)
		if err != nil {
			return 0, err
		}
		code, hit, err := compileCached(b.rtc, b.cacheDir, file, src, b.tgt)
		if err != nil {
			return 0, err
		}
		if hit {
			b.compiledFromDisk++
		} else {
			b.compiledNow++
		}
		var pin runtime.Pinner
		pin.Pin(&code[0])
		err = b.drv.check("cuModuleLoadData", b.drv.cuModuleLoadData(&mod, unsafe.Pointer(&code[0])))
		pin.Unpin()
		if err != nil {
			return 0, fmt.Errorf("loading kernel %s (%s): %w", file, b.tgt, err)
		}
		b.modules[file] = mod
	}
	var f cuHandle
	if err := b.drv.check("cuModuleGetFunction", b.drv.cuModuleGetFunction(&f, mod, fn)); err != nil {
		return 0, fmt.Errorf("kernel %s in %s: %w", fn, file, err)
	}
	b.funcs[key] = f
	return f, nil
}

// kernelArgs copies args into separately allocated values and returns the
// void*[] cuLaunchKernel takes, with every value and the array pinned by
// pin (the caller unpins after the launch: the driver copies the values
// at launch). Accepted: uint64 (device pointers), int32, int64, float32,
// float64, and pointers to the by-value structs (*levelsArg, *geomArg,
// *dgeomArg, *sineTable).
func kernelArgs(pin *runtime.Pinner, args []any) ([]unsafe.Pointer, error) {
	params := make([]unsafe.Pointer, len(args)+1) // +1: never empty
	for i, a := range args {
		var p unsafe.Pointer
		switch v := a.(type) {
		case uint64:
			q := new(uint64)
			*q = v
			p = unsafe.Pointer(q)
		case int32:
			q := new(int32)
			*q = v
			p = unsafe.Pointer(q)
		case int64:
			q := new(int64)
			*q = v
			p = unsafe.Pointer(q)
		case float32:
			q := new(float32)
			*q = v
			p = unsafe.Pointer(q)
		case float64:
			q := new(float64)
			*q = v
			p = unsafe.Pointer(q)
		case *levelsArg:
			p = unsafe.Pointer(v)
		case *geomArg:
			p = unsafe.Pointer(v)
		case *dgeomArg:
			p = unsafe.Pointer(v)
		case *sineTable:
			p = unsafe.Pointer(v)
		default:
			return nil, fmt.Errorf("cuda: kernel argument %d has unsupported type %T", i, a)
		}
		pin.Pin(p)
		params[i] = p
	}
	pin.Pin(&params[0])
	return params, nil
}

// launch queues kernel fn of file on the stream with the given grid,
// block, dynamic shared memory and arguments. Runs on the device thread.
func (b *Backend) launch(file, fn string, grid, block dim3, shared uint32, args ...any) error {
	if err := checkLaunchDims(grid, block, shared); err != nil {
		return fmt.Errorf("%s (%s): %w", fn, file, err)
	}
	if b.dry != nil {
		b.dry.launches = append(b.dry.launches, dryLaunch{file: file, fn: fn, grid: grid, block: block, shared: shared, args: args})
		return nil
	}
	f, err := b.function(file, fn)
	if err != nil {
		return err
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	params, err := kernelArgs(&pin, args)
	if err != nil {
		return err
	}
	code := b.drv.cuLaunchKernel(f, grid.x, grid.y, grid.z, block.x, block.y, block.z, shared, b.stream,
		unsafe.Pointer(&params[0]), nil)
	if err := b.drv.check("cuLaunchKernel", code); err != nil {
		return fmt.Errorf("%s (%s): %w", fn, file, err)
	}
	return nil
}

// launch1D queues a grid-stride kernel over n items; n = 0 queues nothing.
func (b *Backend) launch1D(file, fn string, n int64, args ...any) error {
	if n <= 0 {
		return nil
	}
	return b.launch(file, fn, grid1D(n), dim3{threads1D, 1, 1}, 0, args...)
}

// checkLaunchDims refuses launches the hardware cannot run: grid y and z
// above 65535, more than 1024 threads a block, static-limit shared memory.
func checkLaunchDims(grid, block dim3, shared uint32) error {
	switch {
	case grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 1<<31-1 || grid.y > 65535 || grid.z > 65535:
		return fmt.Errorf("grid %v out of range", grid)
	case block.x*block.y*block.z == 0 || block.x*block.y*block.z > 1024 || block.z > 64:
		return fmt.Errorf("block %v out of range", block)
	case shared > 48<<10:
		return fmt.Errorf("%d bytes of dynamic shared memory (48 KiB without opt-in)", shared)
	}
	return nil
}

// dryRun records what a backend would queue instead of queueing it: the
// device-free test of dispatch, shapes and kernel arguments (compare
// tinygrad's NULL backend).
type dryRun struct {
	launches []dryLaunch
	gemms    int
	copies   int
	next     uint64 // fake scratch addresses
}

// dryLaunch is one recorded kernel launch.
type dryLaunch struct {
	file, fn    string
	grid, block dim3
	shared      uint32
	args        []any
}
