"""The program's version: a leaf module, so that every layer can name it without importing the
package root (whose lazy re-exports reach the API, and through it everything else)."""

__version__ = "0.1.0"
