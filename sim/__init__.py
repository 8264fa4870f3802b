"""The simulated platform: machines, event lists, the publish pipeline, traffic, the CLI.

Only ever ``platform_testbed.sim``: from a checkout's root ``import sim`` would load a
second copy of every module, whose classes are not the installed ones (a ``World`` of one is
not a ``World`` of the other), so it is refused here, with the import to use.
"""

if __name__ != "platform_testbed.sim":
    raise ImportError(
        f"this folder is the package platform_testbed.sim; imported as {__name__!r} it would be a "
        "second copy of the model, with classes of its own: import platform_testbed.sim instead "
        "(installed, or with the checkout's root on PYTHONPATH)"
    )
