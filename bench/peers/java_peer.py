"""The ZooKeeper Java client 3.8 and Apache Curator 5.4: bench/java/ZkBench.java, compiled with the
machine's javac into a temporary directory at bench time and run in a JVM of its own per child run."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from . import Params

SOURCE = Path(__file__).resolve().parent.parent / "java" / "ZkBench.java"
SHARE = Path("/usr/share/java")
COMPILE_JARS = (
    "curator-recipes.jar",
    "curator-framework.jar",
    "curator-client.jar",
    "zookeeper.jar",
    "zookeeper-jute.jar",
    "guava.jar",
    "slf4j-api.jar",
)


def missing() -> str | None:
    """Why the Java peer cannot run here, or None."""
    if shutil.which("javac") is None or shutil.which("java") is None:
        return "javac/java not found (apt-get install default-jdk-headless)"
    absent = [j for j in COMPILE_JARS if not (SHARE / j).exists()]
    if absent:
        return f"missing in {SHARE}: {', '.join(absent)} (apt-get install zookeeper libcurator-recipes-java)"
    return None


def start_compile(out: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Start compiling ZkBench into ``out`` (in the background); return javac's process and the class
    path to run ZkBench with once it has finished."""
    cp = ":".join(str(SHARE / j) for j in COMPILE_JARS)
    proc = subprocess.Popen(["javac", "-nowarn", "-d", str(out), "-cp", cp, str(SOURCE)])
    return proc, f"{out}:{cp}:{SHARE}/*"


def command(classpath: str, metric: str, hosts: str, path: str, p: Params) -> list[str]:
    args = [f"{k}={float(v)!r}" for k, v in p.to_json().items()]
    return ["java", "-cp", classpath, "ZkBench", metric, hosts, path, *args]
