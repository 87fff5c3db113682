"""passhost-cmsis-nn: the ``cmsis-nn`` target kind (int8/int16 operators as CMSIS-NN calls)."""
