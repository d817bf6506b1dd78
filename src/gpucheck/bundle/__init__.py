"""Support bundles: `gpucheck snapshot --bundle FILE.tar.gz` (making.py); model/bundle.py
reads them back."""
