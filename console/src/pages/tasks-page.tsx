import { Problems, TableHead } from './page-parts';
import { api, messageOf } from '../api';
import { usePolled } from './use-polled';
import { useState } from 'preact/hooks';

interface TaskRow {
  task_id: string;
  status: string;
  model_name: string;
  submit_time: string;
  end_time?: string;
}

interface TaskDetail {
  output: {
    task_status: string;
    code?: string;
    message?: string;
    choices?: { message?: { content?: { image?: string }[] } }[];
  };
}

const REFRESH_MS = 3000;

/** The caller's tasks (every task for an admin), newest first, with results and cancel. */
export function TasksPage() {
  const tasks = usePolled(
    () => api<{ data: TaskRow[]; total: number }>('/api/v1/tasks?page_size=50'),
    REFRESH_MS,
  );
  const [opened, setOpened] = useState<{ id: string; detail: TaskDetail } | undefined>();
  const [problem, setProblem] = useState<string | undefined>();

  async function open(id: string): Promise<void> {
    try {
      setOpened({ id, detail: await api<TaskDetail>(`/api/v1/tasks/${encodeURIComponent(id)}`) });
    } catch (error) {
      setProblem(messageOf(error));
    }
  }
  async function cancel(id: string): Promise<void> {
    try {
      await api(`/api/v1/tasks/${encodeURIComponent(id)}/cancel`, { method: 'POST' });
      tasks.refresh();
    } catch (error) {
      setProblem(messageOf(error));
    }
  }

  return (
    <section class="page">
      <h1>Tasks</h1>
      <Problems texts={[tasks.problem, problem]} />
      <p class="hint">
        {tasks.value === undefined
          ? 'Loading…'
          : `${tasks.value.total} task(s); refreshed every 3 s.`}
      </p>
      <table data-testid="tasks">
        <TableHead titles={['Task', 'Status', 'Model', 'Submitted (UTC)', 'Actions']} />
        <tbody>
          {(tasks.value?.data ?? []).map((task) => (
            <tr key={task.task_id} data-task-id={task.task_id}>
              <td>
                <code>{task.task_id}</code>
              </td>
              <td data-testid="status">{task.status}</td>
              <td>{task.model_name}</td>
              <td>{task.submit_time}</td>
              <td>
                <button type="button" onClick={() => void open(task.task_id)}>
                  Show
                </button>{' '}
                {task.status === 'PENDING' && (
                  <button type="button" onClick={() => void cancel(task.task_id)}>
                    Cancel
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {opened !== undefined && <TaskResult id={opened.id} detail={opened.detail} />}
    </section>
  );
}

function TaskResult({ id, detail }: { id: string; detail: TaskDetail }) {
  const images = (detail.output.choices ?? []).flatMap((choice) => choice.message?.content ?? []);
  return (
    <section aria-label={`Task ${id}`} class="card">
      <h2>
        Task {id}: {detail.output.task_status}
      </h2>
      {detail.output.code !== undefined && (
        <p class="error">
          {detail.output.code}: {detail.output.message}
        </p>
      )}
      <ol class="gallery">
        {images.map((item, index) => (
          <li key={index}>
            <img src={item.image} alt={`Result ${index + 1}`} />
          </li>
        ))}
      </ol>
    </section>
  );
}
