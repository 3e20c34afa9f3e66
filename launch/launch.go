package launch

import (
	"errors"
	"fmt"

	"github.com/gradtune/gradtune/configs"
)

// Device is what binding and launching need of a device. Function values
// are the device's own (a loaded kernel entry).
type Device interface {
	// Pointer is the argument value that passes device address addr.
	Pointer(addr uint64) any
	// TensorMap encodes m into its argument value over global, the
	// address of the tensor's element (0, …, 0): its buffer's address
	// plus m.Offset (m.Global), already added.
	TensorMap(m configs.TensorMapSpec, global uint64) (any, error)
	// Launch enqueues one launch of fn as l says (grid, block, cluster,
	// dynamic shared memory, dependent) with args; an error wrapping
	// ErrNoDependentLaunch means nothing was enqueued because the device
	// cannot launch dependently.
	Launch(fn any, l configs.LaunchSpec, args []any) error
}

// ErrNoDependentLaunch is wrapped by a Device's Launch error when it
// cannot make a dependent launch and enqueued nothing.
var ErrNoDependentLaunch = errors.New("dependent launches not supported")

// Memory gives the device address and the size in bytes of each buffer of
// a plan.
type Memory interface {
	Buffer(name string) (addr uint64, bytes int, ok bool)
}

// Bound is a plan whose arguments are bound to device buffers, ready to
// run.
type Bound struct {
	launches []configs.LaunchSpec
	funcs    []any
	args     [][]any
	// plain is set once the device refused a dependent launch: the later
	// dependent launches go in plain stream order.
	plain bool
}

// Bind binds plan's arguments to the buffers of mem on dev; funcs holds
// the device function of each launch of plan, in order.
func Bind(dev Device, plan configs.Plan, funcs []any, mem Memory) (*Bound, error) {
	if len(funcs) != len(plan.Launches) {
		return nil, fmt.Errorf("launch: %d functions for %d launches", len(funcs), len(plan.Launches))
	}
	b := &Bound{launches: plan.Launches, funcs: funcs}
	for _, l := range plan.Launches {
		args := make([]any, len(l.Args))
		for j, a := range l.Args {
			v, err := bindArg(dev, a, mem)
			if err != nil {
				return nil, fmt.Errorf("launch %s argument %d: %w", l.Entry, j, err)
			}
			args[j] = v
		}
		b.args = append(b.args, args)
	}
	return b, nil
}

func bindArg(dev Device, a configs.ArgSpec, mem Memory) (any, error) {
	switch a.Kind {
	case configs.PointerArg:
		addr, size, ok := mem.Buffer(a.Buffer)
		if !ok {
			return nil, fmt.Errorf("no buffer %q", a.Buffer)
		}
		if a.Offset > int64(size) {
			return nil, fmt.Errorf("offset %d is past the end of %s (%d bytes)", a.Offset, a.Buffer, size)
		}
		return dev.Pointer(addr + uint64(a.Offset)), nil
	case configs.TensorMapArg:
		m := *a.TensorMap
		addr, size, ok := mem.Buffer(m.Buffer)
		if !ok {
			return nil, fmt.Errorf("tensor map of unknown buffer %q", m.Buffer)
		}
		if err := m.CheckAt(addr, size); err != nil {
			return nil, err
		}
		return dev.TensorMap(m, m.Global(addr))
	}
	return a.Value(), nil
}

// Run enqueues every launch in order on dev.
func (b *Bound) Run(dev Device) error {
	for i, l := range b.launches {
		if b.plain && l.Dependent {
			l.Dependent = false
		}
		err := dev.Launch(b.funcs[i], l, b.args[i])
		if l.Dependent && errors.Is(err, ErrNoDependentLaunch) {
			b.plain = true
			l.Dependent = false
			err = dev.Launch(b.funcs[i], l, b.args[i])
		}
		if err != nil {
			return fmt.Errorf("launching %s: %w", l.Entry, err)
		}
	}
	return nil
}

// Launches is the bound plan's launches.
func (b *Bound) Launches() []configs.LaunchSpec { return b.launches }
