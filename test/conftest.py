"""Fixtures shared by several test modules."""

import subprocess

import pytest

_NOT_UNIT = ("integration", "kvm", "netns")


def pytest_collection_modifyitems(items):
    """Mark as ``unit`` every test its module does not mark otherwise, so
    that ``-m unit`` selects the in-process tests."""
    for item in items:
        if not any(item.get_closest_marker(name) for name in _NOT_UNIT):
            item.add_marker(pytest.mark.unit)


@pytest.fixture
def loop_device(tmp_path):
    """A 4 MiB loop device (skips the test where none can be made)."""
    image = str(tmp_path / "loop.img")
    with open(image, "wb") as fobj:
        fobj.truncate(4 * 1024 * 1024)
    try:
        result = subprocess.run(["losetup", "-f", "--show", image],
                                capture_output=True, text=True, check=False)
    except FileNotFoundError:
        pytest.skip("losetup is not installed")
    if result.returncode != 0:
        pytest.skip("cannot create loop devices here: %s" %
                    result.stderr.strip())
    device = result.stdout.strip()
    try:
        yield device
    finally:
        subprocess.run(["losetup", "-d", device], check=False)
