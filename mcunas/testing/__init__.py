"""Test devices: a virtual board that speaks the serial protocol, for tests and demos.

Product code opens them by name (the measurer and meter registries), never by import.
"""
