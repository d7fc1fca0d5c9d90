"""A project fixture for ranks_suite.py: set up once in the pytest process, handed to the ranks by value."""

import os
import threading

import pytest


@pytest.fixture
def shared_config():
    return {"greeting": "hello from conftest", "pytest_pid": os.getpid()}


@pytest.fixture
def lock():
    return threading.Lock()  # does not pickle
