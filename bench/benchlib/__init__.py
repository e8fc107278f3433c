"""What bench/run.py, the driver of a benchmark run, builds on: the rows it measures (rows.py) and the tables and
chart it makes of them (tables.py).  Imported with bench/ on ``sys.path``, as bench/peers is."""
