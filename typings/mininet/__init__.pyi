# Type stubs for the parts of Mininet (https://github.com/mininet/mininet) that NetArena uses.
# Mininet ships neither annotations nor a py.typed marker, and no stub package exists; these
# stubs describe only the names app-route imports, so the strict type gate covers those calls.
