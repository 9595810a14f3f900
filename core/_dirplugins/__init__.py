"""The private parent package of directory plugins.

`ctxplug.discovery.import_directory_plugin` imports each ``<dir>/context_engine/<name>/`` as a sub-package of this
one (its name carries a digest of the directory's path), so a plugin can never clash with, or be mistaken for, an
installed module, and its relative imports work. Nothing else lives here.
"""
