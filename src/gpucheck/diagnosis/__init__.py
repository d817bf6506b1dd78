"""The doctor's feature: one request (what to diagnose, which checks, what the job requires),
judged once for every caller, and one flow from it to the report (probe or read the snapshot,
run the selected checks). `gpucheck doctor` and `gpucheck.doctor()` both call `run`.

(Named diagnosis, not doctor: importing a subpackage gpucheck.doctor would replace the API's
function `gpucheck.doctor` on the package with the module.)"""

from gpucheck.diagnosis.flow import diagnose as diagnose
from gpucheck.diagnosis.flow import run as run
from gpucheck.diagnosis.request import Caller as Caller
from gpucheck.diagnosis.request import DoctorRequest as DoctorRequest
from gpucheck.diagnosis.request import RequestError as RequestError
