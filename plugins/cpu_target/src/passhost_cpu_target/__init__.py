"""passhost-cpu-target: the ``cpu`` target kind, compiling PrimFuncs to Python over NumPy."""
