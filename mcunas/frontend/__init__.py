"""The audio front end as a TFLite Micro graph: its parameters, its writer, running it."""
