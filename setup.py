"""Packages for setuptools; everything else is in pyproject.toml.

The default suite lives in `suites/` (asv's benchmark folder, edited in place) and is
installed as the package `jitbench.default_suite`, so `jitbench run` finds it wherever
jitbench is installed. pyproject.toml cannot map one package from outside the package
folder while finding the others, hence this file.
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["jitbench", "jitbench.*"]), "jitbench.default_suite"],
    package_dir={"jitbench.default_suite": "suites"},
)
