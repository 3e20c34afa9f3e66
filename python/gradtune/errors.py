"""The package's exceptions. Each names what was wrong; the classes mirror
the Go sentinel errors (configs.ErrMalformed, configs.ErrBadProgram, ...)
so that a caller can tell the cases apart."""


class GradtuneError(Exception):
    """Base of every error the package raises on bad tables or programs."""


class DecodeError(GradtuneError, ValueError):
    """JSON that does not decode into the launch contract's types."""


class BadProgram(GradtuneError):
    """A program that cannot be launched as described (configs.ErrBadProgram)."""


class TableError(GradtuneError):
    """A config table that cannot be read."""


class Malformed(TableError):
    """A table that is not valid (configs.ErrMalformed)."""


class SchemaTooNew(TableError):
    """A table written by a newer gradtune (configs.ErrSchemaTooNew)."""


class SchemaTooOld(TableError):
    """A table written by an older gradtune (configs.ErrSchemaTooOld)."""


class NoEntry(GradtuneError, LookupError):
    """Lookup found nothing to launch; the subclasses say why."""


class UnknownGPU(NoEntry):
    """No table for the GPU (configs.ErrUnknownGPU)."""


class UnknownKernel(NoEntry):
    """No table of the GPU holds the kernel (configs.ErrUnknownKernel)."""


class NoConfig(NoEntry):
    """Nothing tuned for the dtype and shape (configs.ErrNoConfig)."""


class NotLaunchable(GradtuneError):
    """An entry whose PTX does not compute the asked shape."""


class NoPTX(GradtuneError):
    """An entry without a PTX file, or one that does not match its hash."""
