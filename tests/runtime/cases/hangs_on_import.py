"""A module whose import never ends (within any test's patience): a fork server preloading it hangs."""

import time

time.sleep(600)
