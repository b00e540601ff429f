"""Static scans of the verified bundle: the Scanner interface (interface.py), the semgrep, bandit
and builtin scanners, file reading and staging, diff/full scope and attribution (scope.py), the
result cache (cache.py), the engine that ties them together (engine.py) and the stage (stage.py).
"""
